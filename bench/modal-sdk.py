"""The Python SDK's half of bench/modal-sdk.bench.ts: the same operations berth's half times, with
Modal's official SDK (the pinned venv), against the simulator the bench started. Prints one JSON
object of millisecond samples. Knobs: BENCH_EXEC_REPS, BENCH_CONCURRENT, BENCH_IMAGE."""
import asyncio
import json
import os
import time

import modal

EXEC_REPS = int(os.environ.get("BENCH_EXEC_REPS", "20"))
CONCURRENT = int(os.environ.get("BENCH_CONCURRENT", "50"))
IMAGE = os.environ.get("BENCH_IMAGE", "berth-test/busybox:latest")
ms = lambda t0: (time.perf_counter() - t0) * 1000


async def main() -> dict:
    app = await modal.App.lookup.aio("berth-bench-sdk", create_if_missing=True)
    image = modal.Image.from_registry(IMAGE)
    await image.build.aio(app)  # the image is not what is timed: both halves start from a built one
    out = {}

    t0 = time.perf_counter()
    sb = await modal.Sandbox.create.aio("sleep", "600", app=app, image=image, timeout=600)
    p = await sb.exec.aio("true")
    await p.wait.aio()
    out["create_first_exec"] = [ms(t0)]

    samples = []
    for _ in range(EXEC_REPS):
        t0 = time.perf_counter()
        p = await sb.exec.aio("echo", "hi")
        assert await p.stdout.read.aio() == "hi\n"
        await p.wait.aio()
        samples.append(ms(t0))
    out["exec_round_trip"] = samples
    await sb.terminate.aio()

    async def start_one():
        s = await modal.Sandbox.create.aio("sleep", "600", app=app, image=image, timeout=600)
        # Started means running: a first command answered, as berth's start() resolves.
        q = await s.exec.aio("true")
        await q.wait.aio()
        return s

    t0 = time.perf_counter()
    many = await asyncio.gather(*(start_one() for _ in range(CONCURRENT)))
    out["concurrent_starts"] = [ms(t0)]
    await asyncio.gather(*(s.terminate.aio() for s in many))
    return out


print(json.dumps(asyncio.run(main())))

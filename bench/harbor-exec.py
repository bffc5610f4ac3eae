"""Per-exec latency of one harbor environment class, in harbor's venv: start one sandbox, run
`true` N times through env.exec (as harbor's agents do), print the milliseconds as JSON.

    python bench/harbor-exec.py docker|berth <image> <n>
"""

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths


async def main(kind: str, image: str, n: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="berth-bench-exec-"))
    (work / "environment").mkdir()
    kwargs = dict(
        environment_dir=work / "environment",
        environment_name="bench",
        session_id=f"bench-exec-{kind}__env",
        trial_paths=TrialPaths(trial_dir=work / "trial"),
        task_env_config=EnvironmentConfig(docker_image=image),
    )
    if kind == "docker":
        from harbor.environments.docker.docker import DockerEnvironment

        env = DockerEnvironment(**kwargs)
    else:
        from berth_harbor import BerthEnvironment

        env = BerthEnvironment(backend="docker", **kwargs)
    began = time.perf_counter()
    await env.start(force_build=False)
    start_ms = (time.perf_counter() - began) * 1000
    times = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            result = await env.exec("true")
            times.append((time.perf_counter() - t0) * 1000)
            assert result.return_code == 0, result
    finally:
        await env.stop(delete=True)
        if kind == "berth":
            from berth_harbor.rpc import close_all

            await close_all()
    print(json.dumps({"start": start_ms, "exec": times}))


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))

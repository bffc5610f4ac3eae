"""The client half of `berth serve --stdio` (protocol 1, @berth/serve's README): one berth process
per distinct set of backend options, started on first use and shared by every trial of the job.

Calls are concurrent, matched by id. A call whose coroutine is cancelled (harbor's phase timeouts
cancel it) sends ``$/cancel`` so berth kills the command, then re-raises. If the process dies,
every call waiting on it fails at once with a retryable RuntimeRequestError, and the next call
starts a new process; berth's guardian removes the dead one's sandboxes.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import signal
from typing import Any, Awaitable, Callable

from .errors import RuntimeRequestError, from_rpc

PROTOCOL_VERSION = 1
LOG = logging.getLogger("berth_harbor")
OutputCallback = Callable[[str, str], Awaitable[None] | None]


class BerthProcess:
    """One `berth serve --stdio` child and the calls in flight on it."""

    def __init__(self, command: list[str]):
        self._command = command
        self._proc: asyncio.subprocess.Process | None = None
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._outputs: dict[int, OutputCallback] = {}
        self._dead: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.info: dict[str, Any] = {}

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._dead is None

    async def open(self, initialize: dict[str, Any]) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            *self._command,
            "serve",
            "--stdio",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
            # Its own process group: a Ctrl-C at harbor's terminal reaches harbor, which then
            # closes berth's stdin; berth tears its sandboxes down instead of dying mid-call.
            start_new_session=True,
        )
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._log_stderr())]
        self.info = await self.call("initialize", {"protocol": PROTOCOL_VERSION, "client": "harbor-berth", **initialize})

    async def _read(self) -> None:
        assert self._proc and self._proc.stdout
        try:
            while line := await self._proc.stdout.readline():
                message = json.loads(line)
                if "id" in message and message["id"] is not None:
                    future = self._waiting.pop(message["id"], None)
                    self._outputs.pop(message["id"], None)
                    if future and not future.done():
                        future.set_result(message)
                elif message.get("method") == "output":
                    params = message.get("params", {})
                    callback = self._outputs.get(params.get("call"))
                    if callback:
                        result = callback(params.get("data", ""), params.get("stream", "stdout"))
                        if asyncio.iscoroutine(result):
                            await result
        except Exception as error:  # a broken line: the process is no use any more
            LOG.warning("berth serve: unreadable output: %s", error)
        code = await self._proc.wait()
        self._die(f"the berth process (pid {self._proc.pid}) exited with status {code}")

    async def _log_stderr(self) -> None:
        assert self._proc and self._proc.stderr
        while line := await self._proc.stderr.readline():
            LOG.warning("berth: %s", line.decode(errors="replace").rstrip())

    def _die(self, reason: str) -> None:
        self._dead = reason
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(
                    RuntimeRequestError(
                        f"[berth BackendUnavailableError] {reason} while the call was in flight: its sandboxes are removed by berth's guardian; retry the trial",
                        {"classification": {"category": "transient_infra", "retryable": True}},
                    )
                )

    async def call(self, method: str, params: dict[str, Any], on_output: OutputCallback | None = None) -> dict[str, Any]:
        if self._dead or not self._proc or not self._proc.stdin:
            raise RuntimeRequestError(f"[berth BackendUnavailableError] {self._dead or 'the berth process is not running'}")
        self._next += 1
        call_id = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        if on_output:
            self._outputs[call_id] = on_output
        self._write({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        try:
            answer = await asyncio.shield(future)
        except asyncio.CancelledError:
            # harbor timed the phase out (or is stopping): berth kills the command; a late answer is dropped.
            self._waiting.pop(call_id, None)
            self._outputs.pop(call_id, None)
            if not self._dead:
                self._write({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": call_id}})
            raise
        if "error" in answer:
            raise from_rpc(answer["error"])
        return answer.get("result") or {}

    def _write(self, message: dict[str, Any]) -> None:
        assert self._proc and self._proc.stdin
        try:
            self._proc.stdin.write((json.dumps(message) + "\n").encode())
        except (BrokenPipeError, ConnectionResetError) as error:
            self._die(f"the berth process is gone ({error})")

    async def close(self) -> None:
        """Ends berth's stdin: berth tears down every sandbox it started, then exits."""
        if not self._proc:
            return
        if self._proc.stdin and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), timeout=120)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self.kill()
        for task in self._tasks:
            task.cancel()

    def kill(self) -> None:
        """Last resort (interpreter exit): the guardian removes what berth had started."""
        if self._proc and self._proc.returncode is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


_processes: dict[str, BerthProcess] = {}
_opening: dict[str, asyncio.Lock] = {}
_cleanup_registered = False


async def shared_process(command: list[str], initialize: dict[str, Any]) -> BerthProcess:
    """The berth process for these options (one per distinct set, shared by all trials), started on first use."""
    key = json.dumps([command, initialize], sort_keys=True)
    lock = _opening.setdefault(key, asyncio.Lock())
    async with lock:
        process = _processes.get(key)
        if process and process.alive:
            return process
        process = BerthProcess(command)
        await process.open(initialize)
        _processes[key] = process
        _register_cleanup()
        return process


def _register_cleanup() -> None:
    global _cleanup_registered
    if _cleanup_registered:
        return
    _cleanup_registered = True
    try:
        from harbor.utils.async_cleanup import register_async_cleanup

        register_async_cleanup(close_all)
    except ImportError:  # another harbor: the atexit fallback still ends the processes
        pass
    atexit.register(lambda: [p.kill() for p in _processes.values()])


async def close_all() -> None:
    processes = list(_processes.values())
    _processes.clear()
    await asyncio.gather(*(p.close() for p in processes), return_exceptions=True)

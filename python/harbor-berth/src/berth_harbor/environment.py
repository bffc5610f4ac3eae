"""harbor's ``BaseEnvironment`` (0.25 and 0.26) on berth: ``harbor run -e berth_harbor:BerthEnvironment --ek backend=k8s``.

Every call goes to a shared `berth serve --stdio` process (rpc.py). What harbor means by each
argument is kept: ``exec`` runs ``bash -c <command>`` as ``user`` (else the phase's default user,
else the image's), with the merged env and ``cwd or [environment].workdir``; a berth-side timeout
returns 124, as harbor's Kubernetes environments do, never a TimeoutError (harbor would relabel
it). Network policies switch per phase through berth's network switching.
"""

from __future__ import annotations

import functools
import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities, EnvironmentResourceCapabilities
from harbor.environments.definition import require_agent_environment_definition, should_use_prebuilt_docker_image
from harbor.models.task.config import NetworkMode, NetworkPolicy

from .error_policy import berth_policy_in
from .errors import BerthConfigError, BerthHarborError, berth_named
from .options import KEYS, LOG_DIRS, parse_options, refuse_unknown_keys
from .options_model import OPTIONS_MODEL
from .command import berth_command
from .rpc import BerthProcess, shared_process

# Which shell runs harbor's commands, per image (bash, or sh where the image has none): asked once.
_shells: dict[str, str] = {}


def _berth_network(policy: NetworkPolicy) -> Any:
    """harbor's policy as berth's network: 'none', 'public', or an allowlist { allow: [...] } (sorted, so equal lists compare equal)."""
    if policy.network_mode == NetworkMode.NO_NETWORK:
        return "none"
    if policy.network_mode == NetworkMode.ALLOWLIST:
        return {"allow": sorted(policy.allowed_hosts)}
    return "public"


def _harbor_terms(method: Any) -> Any:
    """A berth error raised by `method` under the name this trial's harbor reads (see _named)."""

    @functools.wraps(method)
    async def wrapper(self: BerthEnvironment, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except BerthHarborError as error:
            renamed = self._named(error)
            if renamed is error:
                raise
            raise renamed from error.__cause__

    return wrapper


def _capabilities() -> dict[str, Any]:
    return json.loads(resources.files("berth_harbor").joinpath("capabilities.json").read_text())


class BerthEnvironment(BaseEnvironment):
    # harbor >= 0.26: the --ek keys, typed (None on 0.25, which ignores it).
    options_model = OPTIONS_MODEL

    def __init__(self, *args: Any, **kwargs: Any):
        # harbor reads capabilities inside BaseEnvironment.__init__: the options must be known first.
        # They stay in kwargs: harbor 0.26 checks them against options_model there; 0.25 ignores them.
        given = {key: kwargs[key] for key in kwargs if key in KEYS}
        if OPTIONS_MODEL is None:
            refuse_unknown_keys(kwargs)
        self._berth = parse_options(given)
        self._berth_names: bool | None = None
        self._force_build = False
        self._command = berth_command(self._berth.berth)
        self._caps = _capabilities()[self._berth.capabilities_key]
        self._process: BerthProcess | None = None
        self._id: str | None = None
        self._shell = "bash"
        super().__init__(*args, **kwargs)
        # berth claims no host mounts (capabilities.mounted is false): harbor's own, of its log
        # directories, berth makes in the sandbox and harbor downloads; any other came from
        # --mounts, which would otherwise go silently unused.
        user_mounts = [m for m in getattr(self, "_mounts", None) or [] if str(m.get("target")) not in LOG_DIRS]
        if user_mounts:
            targets = ", ".join(str(m.get("target")) for m in user_mounts)
            raise ValueError(
                f"berth_harbor: harbor's --mounts ({targets}) are not applied: berth's sandboxes get files by upload, "
                "not host mounts; drop --mounts (the task's environment/ and tests/ are uploaded as harbor does)"
            )

    @staticmethod
    def type() -> str:
        return "berth"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(**self._caps["environment"])

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        # Per class, not per backend (harbor asks before any instance): what every backend honours.
        return EnvironmentResourceCapabilities(cpu_limit=True, memory_limit=True, fractional_cpus=True)

    @classmethod
    def preflight(cls, kwargs: dict[str, Any] | None = None) -> None:
        """Before any trial: the --ek keys (harbor >= 0.26 passes them here and checks them against
        options_model), then berth runs. (The backend's own checks come with each start, as typed errors.)"""
        if OPTIONS_MODEL is not None:
            super().preflight(kwargs)
        try:
            command = berth_command(None)
        except ValueError as error:  # it says what to install
            raise SystemExit(str(error)) from error
        try:
            subprocess.run([*command, "--version"], check=True, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as error:
            raise SystemExit(f"berth_harbor: `{' '.join(command)} --version` failed ({error}): set $BERTH_COMMAND to a berth that runs") from error

    def _validate_definition(self) -> None:
        require_agent_environment_definition(self.environment_dir, docker_image=self.task_env_config.docker_image)

    # -- the sandbox ---------------------------------------------------------------------------

    def _spec(self) -> dict[str, Any]:
        config = self.task_env_config
        image: Any
        # harbor's rule: the prebuilt image, unless --force-build and the task has a Dockerfile.
        if should_use_prebuilt_docker_image(self.environment_dir, docker_image=config.docker_image, force_build=self._force_build):
            image = config.docker_image
        else:
            image = {"build": {"context": str(self.environment_dir.resolve()), "dockerfile": "Dockerfile"}}
        resources: dict[str, Any] = {}
        if config.cpus:
            resources["cpus"] = config.cpus
        if config.memory_mb:
            resources["memoryMb"] = config.memory_mb
        if config.storage_mb:
            resources["storageMb"] = config.storage_mb
        if config.gpus:
            resources["gpus"] = config.gpus
            if config.gpu_types:
                resources["gpuTypes"] = list(config.gpu_types)
        policies = [self.network_policy, *self._phase_network_policies]
        spec: dict[str, Any] = {
            "image": image,
            "resources": resources,
            "network": _berth_network(self.network_policy),
            # Another phase's network differs from the start's: the sandbox must be able to switch.
            "networkSwitch": any(_berth_network(p) != _berth_network(self.network_policy) for p in policies),
            "env": self._startup_env() or {},
            # The same for every trial (a per-trial label would give each trial its own warm pool);
            # the trial log names its sandbox.
            "labels": {"berth.harbor": "true"},
        }
        if config.workdir:
            spec["workdir"] = config.workdir
        if self._berth.lifetime_sec:
            spec["timeouts"] = {"lifetimeMs": self._berth.lifetime_sec * 1000}
        return spec

    def _compose(self) -> dict[str, Any]:
        """A compose task's environment/docker-compose.yaml, for berth to read as harbor's docker
        environment runs it: main is the sandbox, the other services beside it (berth serve's
        `compose` param). The task's env is what compose interpolates from, over this process's."""
        file = self.environment_dir / "docker-compose.yaml"
        if not file.is_file():
            return {}
        config = self.task_env_config
        compose: dict[str, Any] = {
            "file": str(file.resolve()),
            "contextDir": str(self.environment_dir.resolve()),
            "taskEnv": self._startup_env() or {},
        }
        if config.cpus:
            compose["cpus"] = config.cpus
        if config.memory_mb:
            compose["memoryMb"] = config.memory_mb
        return {"compose": compose}

    @_harbor_terms
    async def start(self, force_build: bool) -> None:
        self._force_build = force_build
        self._process = await shared_process(self._command, self._berth.initialize())
        started = await self._process.call("start", {"spec": self._spec(), **self._compose()})
        self._id = started["id"]
        self.logger.debug("berth sandbox %s started in %s ms (%s)", self._id, started.get("startMs"), self.session_id)
        # harbor expects its log directories (a warm sandbox from the pool has them already: its
        # prepare made them); and its commands are bash's (as harbor's docker environment runs
        # them), or sh's where the image has no bash (busybox), so that such a task runs here too.
        image = json.dumps(self._spec()["image"], sort_keys=True)
        steps = [] if self._berth.pool else [f"mkdir -p {' '.join(LOG_DIRS)} && chmod 777 {' '.join(LOG_DIRS)}"]
        if image not in _shells:
            steps.append("{ command -v bash || true; }")
        if steps:
            made = await self._process.call("exec", {"id": self._id, "argv": ["sh", "-c", " && ".join(steps)], "user": "root"})
            if made.get("exitCode") != 0:
                raise BerthConfigError(f"[berth] could not ready the sandbox for harbor (its log directories, a shell): {made.get('stdout', '')}{made.get('stderr', '')}")
            if image not in _shells:
                _shells[image] = "bash" if made.get("stdout", "").strip() else "sh"
        self._shell = _shells[image]
        # A prebuilt image with loose files in environment/: harbor's own rule copies them into the workdir.
        await self._upload_environment_dir_after_start()

    async def stop(self, delete: bool) -> None:
        # Under asyncio.shield, and called even after a failed start: idempotent, and never raises
        # (harbor would record a stop failure as the trial's error).
        sandbox, self._id = self._id, None
        if sandbox is None or self._process is None:
            return
        if not delete:
            self.logger.warning("berth sandbox %s kept (--no-delete): it is removed when harbor exits", sandbox)
            return
        try:
            await self._process.call("teardown", {"id": sandbox})
        except BerthHarborError as error:
            self.logger.warning("berth: tearing down %s failed: %s", sandbox, error)

    def _named(self, error: BerthHarborError) -> BerthHarborError:
        """berth's own names where the trial's config maps them all (harbor >= 0.26 with
        error-policy.yaml: harbor writes the trial's config.json as the trial starts), else the
        harbor names it has always read."""
        if self._berth_names is None:
            config = getattr(self.trial_paths, "config_path", None)
            if config is None or not config.exists():
                return error
            self._berth_names = berth_policy_in(config)
        return berth_named(error) if self._berth_names else error

    def _sandbox(self) -> tuple[BerthProcess, str]:
        if self._process is None or self._id is None:
            raise BerthConfigError("[berth] the sandbox is not running (its start failed, or it was stopped)")
        return self._process, self._id

    # -- commands ------------------------------------------------------------------------------

    @_harbor_terms
    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        process, sandbox = self._sandbox()
        resolved = self._resolve_user(user)
        merged = self._merge_env(env)
        params: dict[str, Any] = {"id": sandbox, "argv": [self._shell, "-c", command]}
        if resolved is not None:
            params["user"] = str(resolved)
        if merged:
            params["env"] = merged
        workdir = cwd or self.task_env_config.workdir
        if workdir:
            params["cwd"] = workdir
        if timeout_sec:
            params["timeoutMs"] = int(timeout_sec * 1000)
        callback = self._output_callback()
        if callback:
            params["stream"] = True
        result = await process.call("exec", params, on_output=callback)
        if result.get("timedOut"):
            return ExecResult(stdout=result.get("stdout"), stderr=f"{result.get('stderr') or ''}Command timed out after {timeout_sec} seconds", return_code=124)
        return ExecResult(stdout=result.get("stdout"), stderr=result.get("stderr"), return_code=int(result.get("exitCode", 1)))

    # -- files ---------------------------------------------------------------------------------

    @_harbor_terms
    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        process, sandbox = self._sandbox()
        await process.call("uploadFile", {"id": sandbox, "from": str(Path(source_path).resolve()), "to": target_path})

    @_harbor_terms
    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        process, sandbox = self._sandbox()
        await process.call("uploadDir", {"id": sandbox, "from": str(Path(source_dir).resolve()), "to": target_dir})

    @_harbor_terms
    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        process, sandbox = self._sandbox()
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await process.call("downloadFile", {"id": sandbox, "from": source_path, "to": str(Path(target_path).resolve())})

    @_harbor_terms
    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        process, sandbox = self._sandbox()
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        await process.call("downloadDir", {"id": sandbox, "from": source_dir, "to": str(Path(target_dir).resolve())})

    # -- networks ------------------------------------------------------------------------------

    @_harbor_terms
    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        process, sandbox = self._sandbox()
        await process.call("setNetwork", {"id": sandbox, "mode": _berth_network(network_policy)})


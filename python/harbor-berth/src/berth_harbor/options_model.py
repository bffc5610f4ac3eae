"""harbor >= 0.26's typed environment options: berth's ``--ek`` keys as a pydantic model, so that
``harbor environment schema berth_harbor:BerthEnvironment`` lists them and harbor checks them
before any trial (a key that is not berth's, a value of the wrong type, a key meant for another
backend). harbor 0.25 has no such model (``OPTIONS_MODEL`` is None there) and the constructor's
own check (options.py) does the same job."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from .options import KEYS, parse_options

try:
    from harbor.environments.options import EnvironmentOptions
except ImportError:  # harbor 0.25
    EnvironmentOptions = None  # type: ignore[assignment,misc]

OPTIONS_MODEL: Any = None

if EnvironmentOptions is not None:

    def _help(key: str) -> Any:
        return Field(default=None, description=KEYS[key][1] + ("" if set(KEYS[key][0]) == {"docker", "k8s", "modal"} else f" ({'/'.join(KEYS[key][0])} only)"))

    class BerthEnvironmentOptions(EnvironmentOptions):
        """berth's --ek keys (the plugin's README has them with what each backend does)."""

        backend: Literal["docker", "k8s", "modal"] = Field(default="docker", description=KEYS["backend"][1])
        berth: str | None = _help("berth")
        pool: int = Field(default=0, ge=0, description=KEYS["pool"][1])
        lifetime_sec: int | None = Field(default=None, gt=0, description=KEYS["lifetime_sec"][1])
        pull_policy: Literal["if-missing", "always", "never"] | None = _help("pull_policy")
        mirrors: dict[str, str] | None = _help("mirrors")
        egress_image: str | None = _help("egress_image")
        egress_proxy: bool | None = _help("egress_proxy")
        egress_proxy_image: str | None = _help("egress_proxy_image")
        kubeconfig: str | None = _help("kubeconfig")
        context: str | None = _help("context")
        namespace: str | None = _help("namespace")
        build_repository: str | None = _help("build_repository")
        network_probe: str | None = _help("network_probe")
        image_pull_secrets: list[str] | None = _help("image_pull_secrets")
        app: str | None = _help("app")
        modal_environment: str | None = _help("modal_environment")

        @model_validator(mode="before")
        @classmethod
        def _berth_rules(cls, data: Any) -> Any:
            # Before the types: berth's own check says what is wrong in --ek terms (a key for another
            # backend, host:port, a pool below 0), the words the constructor uses on harbor 0.25.
            if isinstance(data, dict):
                parse_options({k: v for k, v in data.items() if k in KEYS})
            return data

    OPTIONS_MODEL = BerthEnvironmentOptions

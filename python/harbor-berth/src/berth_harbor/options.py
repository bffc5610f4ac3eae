"""``--ek key=value`` for the berth environment: checked at construction (a mistake stops the job
before any trial runs, naming the key), then turned into berth's own option names for
`berth serve`'s ``initialize``. Credentials never go through ``--ek`` (harbor writes its values
into config.json and result.json): each backend reads its own (Docker's config, the kubeconfig,
Modal's token variables).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("docker", "k8s", "modal")
# harbor's log directories, writable by whichever user a phase runs as.
LOG_DIRS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")
PULL_POLICIES = ("if-missing", "always", "never")

# key -> (backends it applies to, what it takes)
KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    "backend": (BACKENDS, "docker, k8s or modal"),
    "berth": (BACKENDS, "the command that runs berth, e.g. 'node /opt/berth/bin/berth.js' (default: $BERTH_COMMAND, else the berth this package carries)"),
    "pool": (BACKENDS, "how many idle sandboxes to keep warm per task image, a whole number >= 0"),
    "pull_policy": (BACKENDS, "if-missing, always or never"),
    "lifetime_sec": (BACKENDS, "a cap on each sandbox's life in seconds, a whole number > 0: past it the sandbox is removed and a command in flight ends as berth's LifetimeExceeded (berth's spec.timeouts.lifetimeMs)"),
    "mirrors": (BACKENDS, 'a JSON object of registry prefixes to mirrors, e.g. {"docker.io":"mirror.example/dockerhub"}'),
    "egress_image": (("docker",), "an image with iptables-restore, for allowlist tasks on hosts where berth cannot make its own (offline, a remote engine without Docker Hub): berth writes each such sandbox's packet filter with it (its Docker option egressImage)"),
    "egress_proxy": (("docker", "k8s"), "true: allowlist names and *.domain wildcards matched by name at berth's egress proxy (TLS server name, HTTP Host, DNS), only on ports 443 and 80; default false: names resolved by berth, every port of their addresses (its Docker and Kubernetes option egressProxy; on Kubernetes a proxy pod in the namespace)"),
    "egress_proxy_image": (("k8s",), "the image of berth's egress proxy pod, any with node >= 20 on PATH (default node:20-alpine; a mirror of it where the cluster cannot pull Docker Hub); implies egress_proxy=true (its Kubernetes option egressProxy.image)"),
    "kubeconfig": (("k8s",), "the kubeconfig file (default $KUBECONFIG, else ~/.kube/config)"),
    "context": (("k8s",), "a context of the kubeconfig"),
    "namespace": (("k8s",), "the namespace pods go into"),
    "build_repository": (("k8s",), "a registry repository to push images built from environment/Dockerfile to, for the cluster to pull"),
    "network_probe": (("k8s",), "host:port every public pod reaches, for proving network none from inside"),
    "image_pull_secrets": (("k8s",), 'pull secrets of the namespace for every pod, a JSON list: ["regcred"]'),
    "app": (("modal",), "the Modal app sandboxes belong to"),
    "modal_environment": (("modal",), "the Modal environment"),
}


class OptionError(ValueError):
    """A bad --ek value: harbor stops the job before any trial, with this message."""


@dataclass
class BerthOptions:
    backend: str = "docker"
    berth: str | None = None
    pool: int = 0
    lifetime_sec: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    build_repository: str | None = None

    @property
    def capabilities_key(self) -> str:
        """Which entry of capabilities.json this configuration claims (Docker's proxy matches wildcards too)."""
        if self.backend in ("docker", "k8s") and self.options.get("egressProxy"):
            return f"{self.backend}-egress-proxy"
        return self.backend

    def initialize(self) -> dict[str, Any]:
        """The params of `initialize`: one berth process per distinct value of this."""
        params: dict[str, Any] = {"backend": self.backend, "options": self.options}
        if self.pool:
            params["pool"] = self.pool
            # A warm sandbox is handed over ready: harbor's log directories made while it waited.
            dirs = " ".join(LOG_DIRS)
            params["prepare"] = ["sh", "-c", f"mkdir -p {dirs} && chmod 777 {dirs}"]
        if self.build_repository:
            params["buildRepository"] = self.build_repository
        return params


def refuse_unknown_keys(kwargs: dict[str, Any]) -> None:
    """harbor 0.25 passes every --ek key to the constructor beside its own arguments and ignores
    what no one takes: a key that is neither berth's nor harbor's is a typo, said here."""
    import inspect

    from harbor.environments.base import BaseEnvironment

    harbors = set(inspect.signature(BaseEnvironment.__init__).parameters) | {"suppress_override_warnings"}
    unknown = sorted(k for k in kwargs if k not in KEYS and k not in harbors)
    if unknown:
        raise OptionError(f"--ek {unknown[0]} is not a berth key: berth's are {', '.join(KEYS)} (the harbor-berth README says what each does)")


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise OptionError(f"--ek {key}={value!r}: {KEYS[key][1]} (a non-empty string)")
    return value


def parse_options(given: dict[str, Any]) -> BerthOptions:
    """The berth keys among a constructor's keyword arguments (harbor passes --ek values there)."""
    backend = given.get("backend", "docker")
    if backend not in BACKENDS:
        raise OptionError(f"--ek backend={backend!r}: choose one of {', '.join(BACKENDS)}")
    for key in given:
        if key in KEYS and backend not in KEYS[key][0]:
            raise OptionError(f"--ek {key} is for --ek backend={'/'.join(KEYS[key][0])}, not backend={backend}")
    out = BerthOptions(backend=backend)
    if "berth" in given:
        out.berth = _text("berth", given["berth"])
    if "pool" in given:
        pool = given["pool"]
        if isinstance(pool, bool) or not isinstance(pool, int) or pool < 0:
            raise OptionError(f"--ek pool={pool!r}: {KEYS['pool'][1]}")
        out.pool = pool
    if "lifetime_sec" in given:
        lifetime = given["lifetime_sec"]
        if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
            raise OptionError(f"--ek lifetime_sec={lifetime!r}: {KEYS['lifetime_sec'][1]}")
        out.lifetime_sec = lifetime
    opts = out.options
    if "pull_policy" in given:
        if given["pull_policy"] not in PULL_POLICIES:
            raise OptionError(f"--ek pull_policy={given['pull_policy']!r}: {KEYS['pull_policy'][1]}")
        opts["pullPolicy"] = given["pull_policy"]
    if "mirrors" in given:
        mirrors = given["mirrors"]
        if not isinstance(mirrors, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mirrors.items()):
            raise OptionError(f"--ek mirrors={mirrors!r}: {KEYS['mirrors'][1]}")
        opts["mirrors"] = [{"from": k, "to": v} for k, v in mirrors.items()]
    if backend == "docker" and "egress_image" in given:
        opts["egressImage"] = _text("egress_image", given["egress_image"])
    if backend in ("docker", "k8s") and "egress_proxy" in given:
        proxy = given["egress_proxy"]
        # harbor passes --ek values as YAML would read them; a quoted one stays a string.
        if proxy in ("true", "false"):
            proxy = proxy == "true"
        if not isinstance(proxy, bool):
            raise OptionError(f"--ek egress_proxy={proxy!r}: true or false ({KEYS['egress_proxy'][1]})")
        opts["egressProxy"] = proxy
    if backend == "k8s" and "egress_proxy_image" in given:
        if given.get("egress_proxy") in (False, "false"):
            raise OptionError("--ek egress_proxy_image is the image of berth's egress proxy, which --ek egress_proxy=false turns off: drop one of them")
        opts["egressProxy"] = {"image": _text("egress_proxy_image", given["egress_proxy_image"])}
    if backend == "k8s":
        kubeconfig = {k: _text(name, given[name]) for name, k in (("kubeconfig", "file"), ("context", "context")) if name in given}
        if kubeconfig:
            opts["kubeconfig"] = kubeconfig
        if "namespace" in given:
            opts["namespace"] = _text("namespace", given["namespace"])
        if "build_repository" in given:
            out.build_repository = _text("build_repository", given["build_repository"])
        if "network_probe" in given:
            probe = _text("network_probe", given["network_probe"])
            m = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})", probe)
            if not m or not 0 < int(m.group(2)) < 65536:
                raise OptionError(f"--ek network_probe={probe!r}: {KEYS['network_probe'][1]} (e.g. 10.0.0.1:443)")
            opts["networkPolicy"] = {"probe": {"host": m.group(1).strip("[]"), "port": int(m.group(2))}}
        if "image_pull_secrets" in given:
            secrets = given["image_pull_secrets"]
            if not isinstance(secrets, list) or not all(isinstance(s, str) and s for s in secrets):
                raise OptionError(f"--ek image_pull_secrets={secrets!r}: {KEYS['image_pull_secrets'][1]}")
            opts["imagePullSecrets"] = secrets
    if backend == "modal":
        if "app" in given:
            opts["appName"] = _text("app", given["app"])
        if "modal_environment" in given:
            opts["environmentName"] = _text("modal_environment", given["modal_environment"])
    return out


def option_key(path: str | None) -> str | None:
    """The --ek key for a berth option path berth named in a ConfigError (`options.namespace`)."""
    if not path:
        return None
    names = {
        "options.namespace": "namespace",
        "options.kubeconfig": "kubeconfig",
        "options.pullPolicy": "pull_policy",
        "options.mirrors": "mirrors",
        "options.egressProxy": "egress_proxy",
        "options.egressProxy.image": "egress_proxy_image",
        "options.egressImage": "egress_image",
        "options.networkPolicy.probe": "network_probe",
        "options.imagePullSecrets": "image_pull_secrets",
        "options.appName": "app",
        "options.environmentName": "modal_environment",
        "params.buildRepository": "build_repository",
        "params.pool": "pool",
        "params.backend": "backend",
    }
    for prefix, key in names.items():
        if path == prefix or path.startswith(prefix + "."):
            return key
    return None

"""berth's errors as harbor sees them.

harbor decides by an exception's class *name* (``type(e).__name__``): its error policy
(``harbor/models/trial/error_policy.py``) says which names are sandbox failures (retried, never
graded), and ``--retry-exclude`` which are never retried. harbor 0.25 reads only its own names,
and so does 0.26 unless the job's config says otherwise; so by default each berth error is raised
as a class whose name harbor already reads the way berth's taxonomy means it. harbor 0.26 reads a
job config's ``override_error_policy`` by name too: when the trial's config maps berth's own names
(``error-policy.yaml``, shipped here), they are raised instead, one per category of berth's
taxonomy (``berth_named``). Either way the message keeps berth's words (what happened, what to
do), starting with berth's own type, and ``berth_error`` / ``classification`` hold berth's whole
error as the server sent it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

# berth's remedies (what fixes an error, by a stable id) said the way a harbor user changes things: --ek keys.
REMEDY_WORDS: dict[str, str] = json.loads(resources.files("berth_harbor").joinpath("remedies.json").read_text())


def in_harbor_words(message: str, error: dict[str, Any]) -> str:
    """The message with each remedy berth named along the cause chain said in --ek terms (exactly its words replaced)."""
    remedies: list[dict[str, Any]] = []
    current: Any = error
    for _ in range(32):
        if not isinstance(current, dict):
            break
        remedy = current.get("remedy")
        if isinstance(remedy, dict) and remedy.get("id") in REMEDY_WORDS and remedy.get("says"):
            remedies.append(remedy)
        current = current.get("cause")
    for remedy in sorted(remedies, key=lambda r: -len(r["says"])):
        message = message.replace(remedy["says"], REMEDY_WORDS[remedy["id"]])
    return message


class BerthHarborError(Exception):
    """Base of every error this plugin raises: berth's error and classification ride along."""

    def __init__(self, message: str, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.berth_error: dict[str, Any] = (data or {}).get("error", {})
        self.classification: dict[str, Any] = (data or {}).get("classification", {})

    @property
    def berth_type(self) -> str:
        return str(self.berth_error.get("type", "unknown"))


# transient infrastructure: harbor's SANDBOX_FAILED names (retried, not graded).
class EnvironmentStartTimeoutError(BerthHarborError):
    """berth's StartupTimeoutError. Not an asyncio.TimeoutError: harbor would relabel that."""


class SandboxBuildFailedError(BerthHarborError):
    """berth's ImageBuildError (transient): the image build failed for a reason worth retrying."""


class SandboxLikelyOutOfMemoryError(BerthHarborError):
    """berth's SandboxLostError when the sandbox was killed for its memory."""


class RuntimeRequestError(BerthHarborError):
    """Any other transient berth error (a sandbox lost, the engine unreachable, a pull that may work
    next time, the berth process gone): the sandbox failed, the task did not."""


# permanent infrastructure: retrying cannot help; the message says what to change.
class BerthConfigError(BerthHarborError):
    """berth's ConfigError, CapabilityError, TaskDefinitionError, and permanent pull or build errors."""


class BerthTaskFailureError(BerthHarborError):
    """berth says the task itself failed (not the infrastructure)."""


class BerthUnclassifiedError(BerthHarborError):
    """Nothing in berth's cause chain says what kind of failure this was: harbor's unclassified too."""


# cancellation: harbor's CANCELLED name (not retried, not graded).
class CancelledError(BerthHarborError):
    """berth's CancelledError: berth was told to stop (not asyncio's: harbor's own cancellations stay asyncio's)."""


# berth's own names, one per category of its taxonomy: raised instead of harbor's where the job's
# config maps them (harbor >= 0.26, error-policy.yaml). BerthTaskFailureError and
# BerthUnclassifiedError keep their names.
class BerthTransientInfraError(BerthHarborError):
    """Transient infrastructure (a sandbox lost, a start that timed out, the engine unreachable): retry the trial."""


class BerthPermanentInfraError(BerthHarborError):
    """Permanent infrastructure (configuration, a capability the backend lacks, a missing image): change what the message says."""


class BerthCancelledError(BerthHarborError):
    """berth was told to stop."""


# Each name's category, for a name raised without berth's classification (the plugin's own).
CATEGORY_OF: dict[str, str] = {
    "EnvironmentStartTimeoutError": "transient_infra",
    "SandboxBuildFailedError": "transient_infra",
    "SandboxLikelyOutOfMemoryError": "transient_infra",
    "RuntimeRequestError": "transient_infra",
    "BerthConfigError": "permanent_infra",
    "BerthTaskFailureError": "task_failure",
    "CancelledError": "cancelled",
}

BERTH_NAMED: dict[str, type[BerthHarborError]] = {
    "transient_infra": BerthTransientInfraError,
    "permanent_infra": BerthPermanentInfraError,
    "task_failure": BerthTaskFailureError,
    "cancelled": BerthCancelledError,
}


def berth_named(error: BerthHarborError) -> BerthHarborError:
    """The same error under berth's own name for its category (same message, same berth error)."""
    category = error.classification.get("category") or CATEGORY_OF.get(type(error).__name__)
    cls = BERTH_NAMED.get(str(category), BerthUnclassifiedError)
    if type(error) is cls:
        return error
    renamed = cls(str(error))
    renamed.berth_error = error.berth_error
    renamed.classification = error.classification or ({"category": category} if category else {})
    renamed.__cause__ = error.__cause__
    return renamed


TRANSIENT_BY_TYPE: dict[str, type[BerthHarborError]] = {
    "StartupTimeoutError": EnvironmentStartTimeoutError,
    "ImageBuildError": SandboxBuildFailedError,
}


def from_rpc(error: dict[str, Any]) -> BerthHarborError:
    """The exception for a JSON-RPC error answer from `berth serve`."""
    data = error.get("data") or {}
    said = in_harbor_words(str(error.get("message", "berth failed")), data.get("error") or {})
    message = f"[berth {(data.get('error') or {}).get('type', 'error')}] {said}"
    category = (data.get("classification") or {}).get("category")
    berth_type = (data.get("error") or {}).get("type", "")
    if category == "cancelled":
        return CancelledError(message, data)
    if category == "transient_infra":
        if berth_type == "SandboxLostError" and "memory" in message.lower():
            return SandboxLikelyOutOfMemoryError(message, data)
        return TRANSIENT_BY_TYPE.get(berth_type, RuntimeRequestError)(message, data)
    if category == "permanent_infra":
        return BerthConfigError(message, data)
    if category == "task_failure":
        return BerthTaskFailureError(message, data)
    return BerthUnclassifiedError(message, data)

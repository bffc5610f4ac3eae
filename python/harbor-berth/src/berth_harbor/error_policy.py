"""``python -m berth_harbor.error_policy``: prints error-policy.yaml, the job-config snippet that maps
berth's own error names for harbor >= 0.26 (see that file). ``berth_policy_in`` says whether a
trial's config carries it, which is when berth raises those names (errors.py)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from .errors import BERTH_NAMED, BerthUnclassifiedError

POLICY_FILE = "error-policy.yaml"
# Every name berth raises under its own names: all must be mapped, or harbor would read one as unknown (retried and graded).
BERTH_NAMES = frozenset([*(cls.__name__ for cls in BERTH_NAMED.values()), BerthUnclassifiedError.__name__])


def policy_text() -> str:
    return resources.files("berth_harbor").joinpath(POLICY_FILE).read_text()


def berth_policy_in(trial_config: Path) -> bool:
    """Whether the trial's config.json (harbor writes it as the trial starts) maps every one of berth's names."""
    try:
        config = json.loads(trial_config.read_text())
    except (OSError, ValueError):
        return False
    overrides = config.get("override_error_policy") if isinstance(config, dict) else None
    return isinstance(overrides, dict) and BERTH_NAMES <= overrides.keys()


if __name__ == "__main__":
    print(policy_text(), end="")

#!/usr/bin/env bash
# harbor (the Python framework) from PyPI in a venv of its own, exactly as pinned in
# python/harbor-berth/requirements-harbor.lock.txt (wheels only, no dependency resolution), with
# berth's harbor plugin (python/harbor-berth) installed from this checkout on top, for the tests
# that run `harbor run -e berth_harbor:BerthEnvironment` (packages/serve/test/harbor-*.test.ts).
# harbor needs Python >= 3.12: python3.12+ on PATH, else pyenv's. Idempotent: nothing is done while
# the venv matches the lock file (the plugin is an editable install: its changes need nothing).
set -euo pipefail

STATE_DIR=${BERTH_TEST_STATE:-/var/lib/berth-test}
VENV=${BERTH_HARBOR_VENV:-$STATE_DIR/harbor-venv}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOCK="$ROOT/python/harbor-berth/requirements-harbor.lock.txt"
log() { printf '[setup] %s\n' "$*" >&2; }

want=$(cat "$LOCK" "$ROOT/python/harbor-berth/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ -x "$VENV/bin/harbor" ] && [ "$(cat "$VENV/berth-lock.sha256" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 12) else 1)' 2>/dev/null; }
python=""
# The lock was made with 3.12: that first, then any later one.
pyenv_versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
for candidate in "${BERTH_HARBOR_PYTHON:-}" python3.12 $(ls -d "$pyenv_versions"/3.12*/bin/python3 2>/dev/null | sort -V -r) python3 python3.13 $(ls -d "$pyenv_versions"/3.1[3-9]*/bin/python3 2>/dev/null | sort -V); do
  [ -n "$candidate" ] || continue
  if command -v "$candidate" >/dev/null 2>&1 && ok "$candidate"; then python=$(command -v "$candidate"); break; fi
done
if [ -z "$python" ]; then
  log "harbor needs Python >= 3.12, and none was found (python3 is $(python3 --version 2>&1)): install one (pyenv install 3.12, or a distribution's python3.12) or point BERTH_HARBOR_PYTHON at it"
  exit 1
fi
log "installing harbor ($(grep '^harbor==' "$LOCK")) with $python into $VENV"
rm -rf "$VENV"
"$python" -m venv "$VENV"
"$VENV/bin/pip" install --disable-pip-version-check --no-input --quiet --only-binary=:all: --no-deps -r "$LOCK"
"$VENV/bin/pip" install --disable-pip-version-check --no-input --quiet --no-deps --no-build-isolation -e "$ROOT/python/harbor-berth"
"$VENV/bin/python" -c 'import harbor, berth_harbor'
echo "$want" >"$VENV/berth-lock.sha256"

#!/usr/bin/env bash
# harbor (the Python framework) from PyPI, each version berth supports in a venv of its own, exactly
# as pinned in python/harbor-berth/requirements-harbor-<version>.lock.txt (wheels only, no dependency
# resolution), with berth's harbor plugin (python/harbor-berth) installed from this checkout on top,
# for the tests that run `harbor run -e berth_harbor:BerthEnvironment`: $STATE_DIR/harbor-<version>-venv,
# and harbor-venv linked to the newest. Also what the wheel tests need: a venv that builds the
# plugin's wheel (requirements-build.lock.txt) and a wheelhouse of every locked wheel, from which a
# fresh venv installs the wheel with no index. harbor needs Python >= 3.12: python3.12+ on PATH,
# else pyenv's. Idempotent: nothing is done while a venv matches its lock file (the plugin is an
# editable install: its changes need nothing).
set -euo pipefail

STATE_DIR=${BERTH_TEST_STATE:-/var/lib/berth-test}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PLUGIN="$ROOT/python/harbor-berth"
WHEELHOUSE="$STATE_DIR/wheelhouse"
log() { printf '[setup] %s\n' "$*" >&2; }
PIP_QUIET=(--disable-pip-version-check --no-input --quiet)

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 12) else 1)' 2>/dev/null; }
python=""
# The locks were made with 3.12: that first, then any later one.
pyenv_versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
for candidate in "${BERTH_HARBOR_PYTHON:-}" python3.12 $(ls -d "$pyenv_versions"/3.12*/bin/python3 2>/dev/null | sort -V -r) python3 python3.13 $(ls -d "$pyenv_versions"/3.1[3-9]*/bin/python3 2>/dev/null | sort -V); do
  [ -n "$candidate" ] || continue
  if command -v "$candidate" >/dev/null 2>&1 && ok "$candidate"; then python=$(command -v "$candidate"); break; fi
done
if [ -z "$python" ]; then
  log "harbor needs Python >= 3.12, and none was found (python3 is $(python3 --version 2>&1)): install one (pyenv install 3.12, or a distribution's python3.12) or point BERTH_HARBOR_PYTHON at it"
  exit 1
fi
echo "$python" >"$STATE_DIR/harbor-python"

# venv_for <venv> <lock> [editable plugin: yes|no]
venv_for() {
  local venv=$1 lock=$2 plugin=$3
  local want
  want=$(cat "$lock" "$PLUGIN/pyproject.toml" | sha256sum | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/berth-lock.sha256" 2>/dev/null || true)" = "$want" ]; then return 0; fi
  log "installing $(basename "$lock") with $python into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install "${PIP_QUIET[@]}" --only-binary=:all: --no-deps -r "$lock"
  if [ "$plugin" = yes ]; then
    "$venv/bin/pip" install "${PIP_QUIET[@]}" --no-deps --no-build-isolation -e "$PLUGIN"
    "$venv/bin/python" -c 'import harbor, berth_harbor'
  fi
  echo "$want" >"$venv/berth-lock.sha256"
}

newest=""
for lock in $(ls "$PLUGIN"/requirements-harbor-*.lock.txt | sort -V); do
  version=$(grep '^harbor==' "$lock" | cut -d= -f3)
  venv_for "$STATE_DIR/harbor-$version-venv" "$lock" yes
  newest=$version
done
# (An older setup made harbor-venv a directory of its own.)
[ -L "$STATE_DIR/harbor-venv" ] || rm -rf "$STATE_DIR/harbor-venv"
ln -sfn "harbor-$newest-venv" "$STATE_DIR/harbor-venv"
venv_for "$STATE_DIR/build-venv" "$PLUGIN/requirements-build.lock.txt" no

# Every locked wheel in one directory (pip's cache has them from the installs above).
want=$(cat "$PLUGIN"/requirements-harbor-*.lock.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$WHEELHOUSE/berth-lock.sha256" 2>/dev/null || true)" != "$want" ]; then
  log "filling $WHEELHOUSE with the locked wheels"
  rm -rf "$WHEELHOUSE"
  mkdir -p "$WHEELHOUSE"
  for lock in "$PLUGIN"/requirements-harbor-*.lock.txt; do
    "$STATE_DIR/build-venv/bin/pip" download "${PIP_QUIET[@]}" --only-binary=:all: --no-deps -r "$lock" -d "$WHEELHOUSE"
  done
  echo "$want" >"$WHEELHOUSE/berth-lock.sha256"
fi

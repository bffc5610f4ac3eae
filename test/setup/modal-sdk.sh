#!/usr/bin/env bash
# Modal's official Python SDK in a venv of its own, exactly as pinned in
# packages/backend-modal/test/sdk/requirements-sdk.lock.txt (modal and every dependency; wheels only,
# no dependency resolution), for the test that runs the SDK against berth's Modal simulator
# (packages/backend-modal/test/sdk-scenario.test.ts). The only thing berth's setup downloads from
# PyPI. Idempotent: nothing is done while the venv matches the lock file.
set -euo pipefail

STATE_DIR=${BERTH_TEST_STATE:-/var/lib/berth-test}
VENV=${BERTH_MODAL_SDK_VENV:-$STATE_DIR/modal-sdk-venv}
LOCK="$(cd "$(dirname "$0")/../.." && pwd)/packages/backend-modal/test/sdk/requirements-sdk.lock.txt"
log() { printf '[setup] %s\n' "$*" >&2; }

want=$(sha256sum "$LOCK" | cut -d' ' -f1)
# The hash is written last, so a venv whose install broke off is made again.
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/berth-lock.sha256" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi
# modal 1.x: Python >= 3.10, < 3.16.
python3 -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] < (3, 16) else 1)' || {
  log "Modal's SDK needs Python 3.10 to 3.15; python3 is $(python3 --version 2>&1)"
  exit 1
}
log "installing Modal's Python SDK ($(grep '^modal==' "$LOCK")) into $VENV"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --disable-pip-version-check --no-input --quiet --only-binary=:all: --no-deps -r "$LOCK"
"$VENV/bin/pip" check >/dev/null
"$VENV/bin/python" -c 'import modal, modal_proto.api_pb2, certifi'
echo "$want" >"$VENV/berth-lock.sha256"

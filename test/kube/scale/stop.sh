#!/usr/bin/env bash
# Stops the scale test bed's processes that setup.sh started (by the PIDs it recorded) and removes
# its state, nodes and pods with it (they live only in its etcd). The built kwok stays in the cache.
set -uo pipefail
SCALE_STATE=${BERTH_KUBE_SCALE_STATE:-/var/lib/berth-kube-scale}
stop_pid() {
  local pidfile=$SCALE_STATE/$1.pid
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null && for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null
  rm -f "$pidfile"
}
# Commands kwok runs for exec and that never ended (stdin never reaches its end there: README.md).
# Only if the recorded PID is still kwok (a stale PID file could name anything).
kwok_pid=$(cat "$SCALE_STATE/kwok.pid" 2>/dev/null)
if [ -n "$kwok_pid" ] && [ "$(readlink -f "/proc/$kwok_pid/exe")" = "$(readlink -f "$SCALE_STATE/kwok")" ]; then
  for child in $(ps -o pid= --ppid "$kwok_pid"); do kill -9 "$child" 2>/dev/null; done
fi
for name in kwok scheduler apiserver etcd; do
  stop_pid "$name"
done
rm -rf "$SCALE_STATE"

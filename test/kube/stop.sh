#!/usr/bin/env bash
# Stops the test cluster's processes that setup.sh started (by the PIDs it recorded) and removes
# its state, so the next setup starts clean. The built binary stays in the cache.
set -uo pipefail
KUBE_STATE=${BERTH_KUBE_STATE:-/var/lib/berth-kube}
stop_pid() {
  local pidfile=$KUBE_STATE/$1.pid
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null && for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null
  rm -f "$pidfile"
}
stop_pid kubelet
# The policy controller, then its iptables chains and ipsets (kube-router removes its own).
stop_pid kube-router
[ -x "$KUBE_STATE/kube-router" ] && "$KUBE_STATE/kube-router" --cleanup-config >/dev/null 2>&1
# The service proxy, then its iptables chains.
stop_pid kube-proxy
[ -x "$KUBE_STATE/kube" ] && "$KUBE_STATE/kube" proxy --cleanup >/dev/null 2>&1
iptables -w -D INPUT -p tcp --dport 6443 ! -s 10.244.0.0/24 -m addrtype ! --src-type LOCAL -j DROP 2>/dev/null
# Every pod's containers, through containerd (their shims outlive containerd otherwise).
CTR=(ctr --address /run/berth-containerd/containerd.sock -n k8s.io)
if [ -S /run/berth-containerd/containerd.sock ]; then
  for id in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
    "${CTR[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1
    for _ in $(seq 1 20); do "${CTR[@]}" tasks delete "$id" >/dev/null 2>&1 && break; sleep 0.2; done
  done
  for id in $("${CTR[@]}" containers ls -q 2>/dev/null); do "${CTR[@]}" containers delete "$id" >/dev/null 2>&1; done
fi
for name in scheduler controller-manager apiserver etcd containerd; do
  stop_pid "$name"
done
# The kubelet's and containerd's mounts under the state directory go before the directory does.
grep -o " $KUBE_STATE[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
grep -o " /run/berth-containerd[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
rm -rf "$KUBE_STATE" /run/berth-containerd

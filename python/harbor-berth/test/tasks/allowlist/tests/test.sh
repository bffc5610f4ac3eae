#!/bin/sh
# The verifier phase is offline again: only lo (Docker, the Modal simulator), or the API server's
# service no longer reached (Kubernetes, where NetworkPolicy cuts the pod off); the agent phase,
# under its allowlist, had more.
mkdir -p /logs/verifier
if [ -n "$KUBERNETES_SERVICE_HOST" ]; then
  if timeout 5 nc -w 2 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" -e /bin/true 2>/dev/null; then now=reached; else now=blocked; fi
  agent=$(cat /tmp/agent-api)
  echo "agent phase: the API server's service $agent; verifier phase: $now"
  if [ "$agent" = reached ] && [ "$now" = blocked ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
  exit 0
fi
now=$(ls /sys/class/net | tr "\n" " ")
agent=$(tr "\n" " " < /tmp/agent-net)
echo "agent phase: $agent; verifier phase: $now"
if [ "$now" = "lo " ] && [ "$agent" != "lo " ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

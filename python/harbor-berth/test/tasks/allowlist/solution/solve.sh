#!/bin/sh
# The agent phase runs under an allowlist of 10.0.0.0/8. Where the network is a container's own
# (Docker, the Modal simulator), the sandbox has an interface besides lo; on Kubernetes it always
# has one, and the API server's service (an address in 10.0.0.0/8 on the test cluster) is reached.
ls /sys/class/net > /tmp/agent-net
if [ -n "$KUBERNETES_SERVICE_HOST" ]; then
  if timeout 5 nc -w 2 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" -e /bin/true 2>/dev/null; then echo reached; else echo blocked; fi > /tmp/agent-api
fi

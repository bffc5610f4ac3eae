#!/bin/sh
# The verifier phase is offline again: only lo; the agent phase, under its allowlist, had more.
mkdir -p /logs/verifier
now=$(ls /sys/class/net | tr "\n" " ")
agent=$(tr "\n" " " < /tmp/agent-net)
echo "agent phase: $agent; verifier phase: $now"
if [ "$now" = "lo " ] && [ "$agent" != "lo " ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

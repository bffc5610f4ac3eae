#!/bin/sh
# The agent phase runs under an allowlist: the sandbox has an interface besides lo.
ls /sys/class/net > /tmp/agent-net

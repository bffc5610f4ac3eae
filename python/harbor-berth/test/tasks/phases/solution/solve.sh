#!/bin/sh
# The agent phase is public: the sandbox has an interface besides lo.
ls /sys/class/net > /tmp/agent-net

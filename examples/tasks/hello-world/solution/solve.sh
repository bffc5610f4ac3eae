#!/bin/sh
# The oracle: what a perfect agent would do.
set -eu
mkdir -p /app
printf 'Hello, world!\n' > /app/hello.txt

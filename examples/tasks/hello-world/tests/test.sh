#!/bin/sh
# The verifier: writes 1 to /logs/verifier/reward.txt when the task is solved, else 0.
mkdir -p /logs/verifier
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then
  echo "PASS: /app/hello.txt is right"
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: /app/hello.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi

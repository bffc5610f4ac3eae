#!/bin/sh
# 1 when /app/count.txt holds the number of lines of /app/words.txt (7), else 0.
mkdir -p /logs/verifier
got=$(cat /app/count.txt 2>/dev/null | tr -d ' \n')
if [ "$got" = 7 ]; then echo "PASS: 7 lines"; echo 1 > /logs/verifier/reward.txt; else echo "FAIL: expected 7, got '$got'"; echo 0 > /logs/verifier/reward.txt; fi

#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /data/sorted.txt 2>/dev/null)" = "$(printf 'apple\nfig\nkiwi\npear')" ]; then
  echo "PASS: /data/sorted.txt is sorted and unique"
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: /data/sorted.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi

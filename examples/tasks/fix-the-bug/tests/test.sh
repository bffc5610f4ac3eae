#!/bin/sh
# 1 when calc.sh multiplies (checked on several pairs), else 0.
mkdir -p /logs/verifier
ok=1
for pair in "6 7 42" "3 3 9" "0 5 0" "12 12 144"; do
  set -- $pair
  got=$(sh /app/calc.sh "$1" "$2" 2>&1)
  if [ "$got" = "$3" ]; then echo "PASS: $1 x $2 = $got"; else echo "FAIL: $1 x $2 gave '$got', expected $3"; ok=0; fi
done
echo "$ok" > /logs/verifier/reward.txt

#!/bin/sh
set -eu
wc -l < /app/words.txt | tr -d ' ' > /app/count.txt

#!/bin/sh
set -eu
sort -u /data/words.txt > /data/sorted.txt

// The POSIX sh scripts behind detached processes (detached-processes.ts), run in the sandbox through
// exec on every backend: the state of a process is a directory of the sandbox's, so any handle
// (another one, another runner's) finds it there and nothing outlives the sandbox.

import { EXEC_MARKER } from './process-tree.js';

/** Where detached processes keep their state: one directory per process, named by its id. */
export const PROCESS_ROOT = '/tmp/.berth-proc';

/** The line spawn's exec prints once the supervisor runs, before the process's output. */
export const SPAWNED = 'berth-spawned';

/**
 * With $d the directory and $2 $3 how much of each stream to replay (bytes from its end; -1: all):
 * copies each output file's new bytes to this exec's stdout and stderr (every 0.02 s for the first
 * half second, then every 0.1 s), and ends once the process ended (its exit written, or its
 * supervisor gone) and everything is copied.
 */
const WATCH_BODY = `start() { n=$(wc -c < "$1"); if [ "$2" -lt 0 ] || [ "$2" -ge "$n" ]; then echo 0; else echo $((n - $2)); fi; }
o=$(start "$d/stdout" "$2"); e=$(start "$d/stderr" "$3"); k=0
while :; do
  over=0; if [ -f "$d/exit" ] || [ ! -d "/proc/$(cat "$d/pid")" ]; then over=1; fi
  n=$(wc -c < "$d/stdout"); if [ "$n" -gt "$o" ]; then tail -c +$((o + 1)) "$d/stdout" | head -c $((n - o)); o=$n; fi
  n=$(wc -c < "$d/stderr"); if [ "$n" -gt "$e" ]; then tail -c +$((e + 1)) "$d/stderr" | head -c $((n - e)) >&2; e=$n; fi
  [ $over = 1 ] && exit 0
  k=$((k + 1)); if [ $k -lt 25 ]; then sleep 0.02; else sleep 0.1; fi
done`;

/**
 * argv: the process's directory, 1 or 0 (stdin kept open), then its command. A supervisor (its
 * own session where `setsid` exists) writes its pid, runs the command with its output in files
 * (stdin a FIFO held open by a keeper until end()), then writes its exit status. Once the
 * supervisor's pid is written this exec prints SPAWNED, then follows the output as WATCH_SCRIPT
 * does (one exec, not two: the first output comes sooner).
 */
export const SPAWN_SCRIPT = `d="$1"; s="$2"; shift 2
mkdir -p ${PROCESS_ROOT} && chmod 1777 ${PROCESS_ROOT} 2>/dev/null
mkdir "$d" || exit 90
: > "$d/stdout"; : > "$d/stderr"
printf '%s\\037' "$@" > "$d/argv"
if [ "$s" = 1 ]; then mkfifo "$d/stdin" || exit 91; fi
run='d="$1"; s="$2"; shift 2; echo $$ > "$d/pid.new"; mv "$d/pid.new" "$d/pid"
if [ "$s" = 1 ]; then sleep 2147483647 > "$d/stdin" & echo $! > "$d/keeper"; "$@" < "$d/stdin" > "$d/stdout" 2> "$d/stderr" & else "$@" < /dev/null > "$d/stdout" 2> "$d/stderr" & fi
c=$!; echo $c > "$d/child"; wait $c; code=$?
[ -f "$d/keeper" ] && kill "$(cat "$d/keeper")" 2>/dev/null
echo $code > "$d/exit.new"; mv "$d/exit.new" "$d/exit"'
# In a subshell that exits at once, without this exec's ${EXEC_MARKER}: the supervisor is not in
# this exec's process tree, so ending this exec (a handle's detach(), its abort) leaves it running.
if command -v setsid >/dev/null 2>&1; then (unset ${EXEC_MARKER}; setsid sh -c "$run" berth-proc "$d" "$s" "$@" < /dev/null > /dev/null 2>&1 &)
else (unset ${EXEC_MARKER}; sh -c "$run" berth-proc "$d" "$s" "$@" < /dev/null > /dev/null 2>&1 &) fi
i=0; while [ ! -s "$d/pid" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
[ -s "$d/pid" ] || exit 92
echo ${SPAWNED}; set -- "$d" -1 -1
${WATCH_BODY}`;

/** argv: the directory, then the replay of each stream (see WATCH_BODY). Exit 93: no such process. */
export const WATCH_SCRIPT = `d="$1"; [ -d "$d" ] || exit 93
${WATCH_BODY}`;

/** argv: the directory. Prints its exit status, or nothing when its supervisor ended without one. Exit 93: no such process. */
export const EXIT_SCRIPT = `d="$1"; [ -d "$d" ] || exit 93; [ -f "$d/exit" ] && cat "$d/exit"; exit 0`;

/**
 * argv: the directory and a signal name. Signals every process of the supervisor's process group
 * but the supervisor itself (which then records the exit), found in /proc; without a group of its
 * own (no setsid), the command. Exit 93: no such process.
 */
export const KILL_SCRIPT = `d="$1"; sig="$2"; [ -d "$d" ] || exit 93; [ -f "$d/exit" ] && exit 0
pg=$(cat "$d/pid"); child=$(cat "$d/child" 2>/dev/null)
hit=0
for f in /proc/[0-9]*/stat; do
  read -r line < "$f" 2>/dev/null || continue
  p=\${f#/proc/}; p=\${p%/stat}; [ "$p" = "$pg" ] && continue
  set -- \${line##*) }
  [ "$3" = "$pg" ] && kill -s "$sig" "$p" 2>/dev/null && hit=1
done
[ $hit = 1 ] || { [ -n "$child" ] && kill -s "$sig" "$child" 2>/dev/null; }
exit 0`;

/** Every process: `id \\t exit-or-empty \\t running(1/0) \\t argv joined by \\037`, one line each. */
export const LIST_SCRIPT = `for d in ${PROCESS_ROOT}/*/; do
  [ -f "$d/pid" ] || continue
  id=\${d%/}; id=\${id##*/}
  code=""; [ -f "$d/exit" ] && code=$(cat "$d/exit")
  up=0; [ -z "$code" ] && [ -d "/proc/$(cat "$d/pid")" ] && up=1
  printf '%s\\t%s\\t%s\\t' "$id" "$code" "$up"; cat "$d/argv"; echo
done; exit 0`;

/** argv: the directory. Exit 94: the process was spawned without stdin (or has ended). Copies this exec's stdin into its FIFO. */
export const WRITE_SCRIPT = `d="$1"; [ -d "$d" ] || exit 93; [ -p "$d/stdin" ] && [ -f "$d/keeper" ] && [ ! -f "$d/exit" ] || exit 94; cat > "$d/stdin"`;

/** argv: the directory. Ends the keeper of its FIFO: the command reads end of input once other writers are done. */
export const END_SCRIPT = `d="$1"; [ -d "$d" ] || exit 93; [ -f "$d/keeper" ] || exit 94; kill "$(cat "$d/keeper")" 2>/dev/null; exit 0`;

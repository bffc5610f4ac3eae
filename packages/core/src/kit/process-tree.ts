import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxTransport } from './transport.js';

/** Every process an exec starts inherits this variable; the tree killer finds them by it. */
export const EXEC_MARKER = 'BERTH_EXEC_ID';

/**
 * Kills a command's whole process tree: every process that carries BERTH_EXEC_ID=<id> in its
 * environment, the command's own PID when known (it may have cleared its environment: env -i,
 * sudo), and every descendant of those, found by parent PID. Marked processes are stopped first,
 * until no new one appears (so nothing forks away or gets reparented during the sweep), then all
 * are killed; repeated until none is left. Needs only sh and cat in the image, and /proc.
 */
const KILL_TREE_SCRIPT = [
  'id=$1; root=$2; self=$$; round=0',
  'while [ $round -lt 10 ]; do',
  '  round=$((round+1)); marked=" "; changed=1',
  '  while [ $changed = 1 ]; do',
  '    changed=0',
  '    for d in /proc/[0-9]*; do',
  '      p=${d#/proc/}',
  '      [ "$p" = "$self" ] && continue',
  '      case "$marked" in *" $p "*) continue;; esac',
  '      hit=0',
  '      [ "$p" = "$root" ] && hit=1',
  `      case "$(cat "$d/environ" 2>/dev/null)" in *"${EXEC_MARKER}=$id"*) hit=1;; esac`,
  '      if [ $hit = 0 ] && read -r stat < "$d/stat" 2>/dev/null; then',
  '        rest=${stat##*) }; set -- $rest',
  '        case "$marked" in *" $2 "*) hit=1;; esac',
  '      fi',
  '      if [ $hit = 1 ]; then kill -STOP "$p" 2>/dev/null; marked="$marked$p "; changed=1; fi',
  '    done',
  '  done',
  '  [ "$marked" = " " ] && exit 0',
  '  kill -KILL $marked 2>/dev/null',
  '  root=',
  'done',
].join('\n');

/** How long the killer may take: a stalled backend must not hold the caller's exec forever. */
export const KILL_TIMEOUT_MS = 10_000;

/** Kill every process of exec `execId` (and `rootPid`'s tree, when known). Never throws. */
export async function killProcessTree(transport: SandboxTransport, execId: string, rootPid = ''): Promise<void> {
  const bound = new AbortController();
  const work = (async () => {
    const killer = await transport.spawn({ argv: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'berth-kill', execId, rootPid], env: {}, stdin: false, asRoot: true });
    // Started after the deadline, or still running at it: drop it.
    if (bound.signal.aborted) killer.abandon();
    bound.signal.addEventListener('abort', () => killer.abandon(), { once: true });
    killer.stdout.resume();
    killer.stderr.resume();
    await Promise.all([finished(killer.stdout), finished(killer.stderr), killer.exit]);
  })();
  await Promise.race([work.catch(() => undefined), sleep(KILL_TIMEOUT_MS, undefined, { signal: bound.signal }).catch(() => undefined)]);
  bound.abort();
}

import type { V1Probe } from '@kubernetes/client-node';
import { BackendUnavailableError } from '@berth/core';
import { BACKEND, type Cluster } from './cluster.js';
import { spawnExec } from './exec-socket.js';

/**
 * Tries one TCP connect from inside the pod, with the first tool the image has (python3, bash's
 * /dev/tcp, nc, perl): exit 0 connected, 1 not, 3 no tool, 4 no address (an empty host means the
 * API server's service from the pod's environment). Read-only: it sends no payload.
 */
const PROBE_SCRIPT = `h=$1 p=$2 w=$3
[ -n "$h" ] || { h=$KUBERNETES_SERVICE_HOST; p=$KUBERNETES_SERVICE_PORT; }
[ -n "$h" ] && [ -n "$p" ] || exit 4
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import socket,sys
try: socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
except OSError: sys.exit(1)' "$h" "$p" "$w" && exit 0 || exit 1
fi
t=; command -v timeout >/dev/null 2>&1 && t="timeout $((w + 1))"
if command -v bash >/dev/null 2>&1 && [ -n "$t" ]; then
  $t bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$h" "$p" 2>/dev/null && exit 0 || exit 1
fi
if command -v nc >/dev/null 2>&1; then
  if nc -h 2>&1 | grep -q -- ' -z'; then $t nc -z -w "$w" "$h" "$p" >/dev/null 2>&1 && exit 0 || exit 1; fi
  $t nc -w "$w" "$h" "$p" </dev/null >/dev/null 2>&1 && exit 0 || exit 1
fi
if command -v perl >/dev/null 2>&1; then
  $t perl -MIO::Socket::INET -e 'exit(IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1], Timeout => $ARGV[2]) ? 0 : 1)' "$h" "$p" "$w" && exit 0 || exit 1
fi
exit 3`;

/** What one probe found. */
export type ProbeResult = 'reached' | 'blocked' | 'no-tool' | 'no-address';

const CONNECT_SECONDS = 2;
/** The exec itself, connect timeout included, gets this long before it counts as not reached. */
const EXEC_LIMIT_MS = 15_000;

/** Runs `argv` in the pod (no stdin), within EXEC_LIMIT_MS: its exit code and stdout; a cut connection is transient. */
async function runInPod(cluster: Cluster, pod: string, argv: string[], what: string): Promise<{ code: number; stdout: string }> {
  const proc = await spawnExec(cluster, pod, { argv, env: {}, stdin: false });
  let stdout = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.resume();
  const timer = setTimeout(() => proc.abandon(), EXEC_LIMIT_MS);
  try {
    const { code } = await proc.exit;
    if (code === null) {
      // Transient: the exec's connection was cut (a restarting API server or kubelet, a loaded node).
      throw new BackendUnavailableError({
        operation: 'network',
        backend: BACKEND,
        message: `${what} ended without an exit status (the exec connection was cut)`,
      });
    }
    return { code, stdout };
  } finally {
    clearTimeout(timer);
  }
}

/** One connect from inside the pod to `target` (default: the API server's service). */
export async function probeFromPod(cluster: Cluster, pod: string, target: { host: string; port: number } | undefined): Promise<ProbeResult> {
  const argv = ['/bin/sh', '-c', PROBE_SCRIPT, 'berth-network-probe', target?.host ?? '', String(target?.port ?? ''), String(CONNECT_SECONDS)];
  const { code } = await runInPod(cluster, pod, argv, 'the network probe');
  if (code === 0) return 'reached';
  if (code === 3) return 'no-tool';
  if (code === 4) return 'no-address';
  return 'blocked';
}

/**
 * The API server's service address as pods see it (KUBERNETES_SERVICE_HOST), read from inside
 * `pod`: the default probe target's address, which the runner cannot know otherwise, for telling
 * whether an allowlist lists it. Undefined when the pod has none.
 */
export async function serviceHostOf(cluster: Cluster, pod: string): Promise<string | undefined> {
  const { stdout } = await runInPod(cluster, pod, ['/bin/sh', '-c', 'echo "$KUBERNETES_SERVICE_HOST"'], "reading the pod's KUBERNETES_SERVICE_HOST");
  return stdout.trim() || undefined;
}

/** What a failed startup probe prints, after this prefix: what it found instead of 'blocked'. */
export const STARTUP_PROBE_SAYS = 'berth-network-probe:';
/** The startup probe runs this often (the kubelet's smallest period). */
const STARTUP_PERIOD_SECONDS = 1;

/**
 * Network 'none' checked by the kubelet, not over an exec per pod: the container counts as started
 * (and the start returns) only once the same connect fails from inside it. It costs no API request
 * (the kubelet runs it; its verdict arrives on the pod watch as `started`), and it stops at the
 * first success. A failure prints what it found ('reached', 'no-tool', 'no-address'), which the
 * kubelet keeps in the pod's events; after `waitMs` of failures the kubelet ends the container.
 */
export function startupProbe(target: { host: string; port: number } | undefined, waitMs: number): V1Probe {
  // What it found also goes to the termination message: it reaches berth on the pod watch when the
  // container ends (the kubelet's kill after waitMs; at once, by ending PID 1, where no probe can ever work).
  const script = `(${PROBE_SCRIPT}
); r=$?; [ $r = 1 ] && { : >/dev/termination-log 2>/dev/null; exit 0; }
case $r in 0) m=reached ;; 3) m=no-tool ;; 4) m=no-address ;; *) m="exit-$r" ;; esac
echo "${STARTUP_PROBE_SAYS} $m"; echo "${STARTUP_PROBE_SAYS} $m" >/dev/termination-log 2>/dev/null
[ $r = 3 ] || [ $r = 4 ] && kill -TERM 1
exit 1`;
  return {
    exec: { command: ['/bin/sh', '-c', script, 'berth-network-probe', target?.host ?? '', String(target?.port ?? ''), String(CONNECT_SECONDS)] },
    periodSeconds: STARTUP_PERIOD_SECONDS,
    timeoutSeconds: CONNECT_SECONDS + 2,
    failureThreshold: Math.max(1, Math.ceil(waitMs / 1000 / STARTUP_PERIOD_SECONDS)),
  };
}

/** What the kubelet's events say the startup probe found, the last time it failed; undefined if it never did. */
export function startupProbeFound(messages: readonly string[]): ProbeResult | undefined {
  let found: ProbeResult | undefined;
  for (const message of messages) {
    const at = message.lastIndexOf(STARTUP_PROBE_SAYS);
    if (at < 0) continue;
    const word = message
      .slice(at + STARTUP_PROBE_SAYS.length)
      .trim()
      .split(/\s/)[0];
    if (word === 'reached' || word === 'no-tool' || word === 'no-address') found = word;
  }
  return found;
}

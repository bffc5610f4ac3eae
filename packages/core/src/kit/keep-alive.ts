/**
 * The main process of a sandbox that runs commands through exec: a shell that sleeps until it is
 * stopped, or until `lifetimeMs` runs out (then it exits 0, which tells a lifetime's end apart
 * from a kill). As PID 1 it also reaps orphans. Portable: needs only sh and sleep.
 */
export function keepAliveCommand(lifetimeMs?: number): string[] {
  const body = lifetimeMs === undefined ? 'while :; do sleep 86400 & wait $!; done' : `sleep ${Math.ceil(lifetimeMs / 1000)} & wait $!`;
  return ['/bin/sh', '-c', `trap 'exit 0' TERM INT; ${body}`];
}

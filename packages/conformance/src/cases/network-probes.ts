import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Environment } from '@berth/core';
import { expect } from 'vitest';
import { DNS_ZONE } from '../dns-responder.js';
import type { ReachableListener } from '../options.js';

/**
 * Sends a fresh token from inside the sandbox to the listener (busybox nc: connect, send, close
 * its side): true when the listener got it. A refused, dropped or unroutable connect is false.
 */
export async function reaches(env: Environment, listener: ReachableListener): Promise<boolean> {
  const token = `berth-${randomBytes(6).toString('hex')}`;
  const r = await env.exec(`printf %s ${token} | nc -w 3 ${listener.host} ${listener.port}`, { timeoutMs: 15_000 });
  const got = listener.received(token);
  // Both sides must agree: nc saying it connected while the listener saw nothing is neither state.
  expect(r.exitCode === 0, `nc exited ${r.exitCode} (${r.stderr.trim()}) but the listener ${got ? 'got' : 'did not get'} the token`).toBe(got);
  return got;
}

/**
 * A DNS lookup from inside of a fresh name in the responder's zone, asked of the responder beside
 * the listener (never a resolver off this machine): true when the query reached it. A public
 * sandbox must get true, so a false on network 'none' is the network's doing, not a dead resolver.
 */
export async function resolves(env: Environment, listener: ReachableListener): Promise<boolean> {
  const name = `berth-${randomBytes(6).toString('hex')}.${DNS_ZONE}`;
  const r = await env.exec(['nslookup', '-type=a', `-port=${listener.dnsPort}`, name, listener.host], { timeoutMs: 30_000 });
  const asked = listener.asked(name);
  // Both sides must agree: an answer printed with no query seen (or the reverse) is neither state.
  const answered = r.exitCode === 0 && r.stdout.includes(name);
  expect(answered, `nslookup exited ${r.exitCode} (${`${r.stdout}${r.stderr}`.trim()}) but the responder ${asked ? 'got' : 'did not get'} the query`).toBe(
    asked,
  );
  return asked;
}

/**
 * A positive control on a fresh public sandbox: the probe must succeed within five tries, 4 s
 * apart. It proves the listener or responder can be reached at all, so that a false on another
 * network is that network's doing; a datagram lost while the engine is loaded is not what a case
 * tests (on the test cluster, while other tests churn pods, a public pod's DNS queries to this
 * machine were refused for over 15 s, its TCP let through). The claims themselves are probed once.
 */
export async function control(probe: () => Promise<boolean>): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (await probe()) return true;
    if (attempt === 5) return false;
    await sleep(4_000);
  }
}

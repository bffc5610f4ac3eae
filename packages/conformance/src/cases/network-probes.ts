import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Environment, EnvironmentSpecInput } from '@berth/core';
import { expect } from 'vitest';
import { DNS_ZONE } from '../dns-responder.js';
import type { Harness } from '../harness.js';
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
 * A positive control: the probe must succeed within `tries` tries, 4 s apart. It proves the
 * listener or responder can be reached at all, so that a false on another network is that
 * network's doing; a datagram lost while the engine is loaded is not what a case tests. The claims
 * themselves are probed once.
 */
export async function control(probe: () => Promise<boolean>, tries = 5): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (await probe()) return true;
    if (attempt === tries) return false;
    await sleep(4_000);
  }
}

/** A positive control's probe of one sandbox, and what its failure means. */
export type ControlCheck = readonly [probe: (env: Environment) => Promise<boolean>, failure: string];

/**
 * Positive controls on fresh public sandboxes: each check tried three times 4 s apart in a
 * sandbox, and those still failing on the next fresh sandbox, up to three. On the test cluster,
 * while other tests churned pods, one public pod's DNS queries to this machine went unanswered for
 * over 20 s while its TCP got through (cause not found; see the issue 32 note); another pod is
 * another address and another path. The ids of the sandboxes tried are in the failure.
 */
export async function publicControls(h: Harness, checks: readonly ControlCheck[], spec: Partial<EnvironmentSpecInput> = { network: 'public' }): Promise<void> {
  let pending = [...checks];
  const tried: string[] = [];
  for (let sandbox = 1; sandbox <= 3 && pending.length > 0; sandbox++) {
    await h.withEnv(spec, async (env) => {
      tried.push(env.id);
      const failing: ControlCheck[] = [];
      for (const check of pending) if (!(await control(() => check[0](env), 3))) failing.push(check);
      pending = failing;
    });
  }
  expect(
    pending.map((c) => c[1]),
    `positive controls failed on fresh public sandboxes ${tried.join(', ')} (3 tries each, 4 s apart)`,
  ).toEqual([]);
}

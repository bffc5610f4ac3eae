import { randomBytes } from 'node:crypto';
import type { Environment } from '@berth/core';
import { describe, expect } from 'vitest';
import { DNS_ZONE, startDnsResponderOn53 } from '../dns-responder.js';
import type { Harness } from '../harness.js';
import type { ReachableListener } from '../options.js';
import { control, publicControls, reaches } from './network-probes.js';

/** Points the sandbox's resolver at `host` (port 53), as root: a resolv.conf of one line. */
async function useResolver(env: Environment, host: string): Promise<void> {
  const r = await env.exec(['sh', '-c', 'echo "nameserver $0" > /etc/resolv.conf', host]);
  expect(r.exitCode, `writing /etc/resolv.conf: ${r.stderr.trim()}`).toBe(0);
}

/**
 * Egress allowlists, for backends claiming `networkAllowlist`: from inside, an allowed address is
 * reached and another is not, in the same sandbox, after a public sandbox reached both (so neither
 * result is vacuous); with `networkSwitch`, none -> allowlist -> public -> none holds at each step.
 * Needs two listeners on two addresses public sandboxes reach (`reachableListener`, `secondListener`).
 */
export function allowlistCases(h: Harness): void {
  describe('network allowlist', () => {
    const missing = () =>
      h.options.reachableListener && h.options.secondListener
        ? undefined
        : 'no reachableListener and secondListener options: an allowlist needs two addresses public sandboxes reach, one allowed and one not';
    const withListeners = async (fn: (allowed: ReachableListener, denied: ReachableListener) => Promise<void>) => {
      const first = h.options.reachableListener;
      const second = h.options.secondListener;
      if (!first || !second) throw new Error('unreachable: the case is skipped without both listeners');
      const allowed = await first();
      const denied = await second().catch(async (error: unknown) => {
        await allowed.close();
        throw error;
      });
      try {
        expect(denied.host, 'the two listeners must be on two addresses').not.toBe(allowed.host);
        await fn(allowed, denied);
      } finally {
        await Promise.all([allowed.close(), denied.close()]);
      }
    };

    h.defineCase({
      id: 'capabilities.network-allowlist',
      title:
        'network { allow: [an address] }: that address is reached from inside and another address is not, in the same sandbox; a public sandbox reaches both',
      unsupported: missing,
      timeoutMs: 180_000,
      run: () =>
        withListeners(async (allowed, denied) => {
          await publicControls(h, [
            [(env) => reaches(env, allowed), `a public sandbox must reach ${allowed.host}:${allowed.port}`],
            [(env) => reaches(env, denied), `a public sandbox must reach ${denied.host}:${denied.port}`],
          ]);
          await h.withEnv({ network: { allow: [allowed.host] } }, async (env) => {
            expect(env.network).toEqual({ allow: [allowed.host] });
            expect(env.networkEnforcement.allowlist?.addresses).toBe('packet');
            expect(await reaches(env, allowed), `the allowed ${allowed.host} was not reached`).toBe(true);
            expect(await reaches(env, denied), `${denied.host}, not in the allowlist, was reached`).toBe(false);
          });
        }),
    });

    h.defineCase({
      id: 'capabilities.network-allowlist-dns',
      title:
        "network { allow: [a name] }: the name resolves inside and reaches its listener (where names are matched by name: resolves inside); a name not allowed does not resolve through the sandbox's resolver, which answers it for a public sandbox",
      unsupported: () =>
        missing() ?? (h.options.allowedName ? undefined : "no allowedName option: the case needs a name the backend resolves to reachableListener's host"),
      timeoutMs: 180_000,
      run: () =>
        withListeners(async (allowed, denied) => {
          const name = h.options.allowedName;
          if (!name) throw new Error('unreachable: the case is skipped without allowedName');
          // The sandbox's resolver, on the address not allowed: it answers any name in its zone with that address.
          const resolver = await startDnsResponderOn53(denied.host);
          try {
            const fresh = () => `berth-${randomBytes(6).toString('hex')}.${DNS_ZONE}`;
            await h.withEnv({ network: 'public' }, async (env) => {
              await useResolver(env, denied.host);
              const answered = fresh();
              expect(
                await control(() => reaches(env, { ...denied, host: answered })),
                `a public sandbox must resolve ${answered} through ${denied.host}:53 and reach it`,
              ).toBe(true);
            });
            await h.withEnv({ network: { allow: [name] } }, async (env) => {
              const enforcement = env.networkEnforcement.allowlist;
              expect(enforcement?.dns).not.toBe('open');
              if (enforcement?.names === 'proxy') {
                // Resolved by the proxy (berth's resolver in the sandbox until the next line changes
                // it): to an address (the name's, or the proxy's own where no redirect sends
                // traffic to it), which the TLS case follows to the listener.
                const found = await env.exec(['nslookup', '-type=a', name], { timeoutMs: 30_000 });
                expect(
                  found.exitCode === 0 && /Name:[\s\S]*Address:?\s+\d+\.\d+\.\d+\.\d+/.test(found.stdout),
                  `the allowed name ${name} did not resolve inside: ${found.stdout}${found.stderr}`,
                ).toBe(true);
              }
              await useResolver(env, denied.host);
              if (enforcement?.names === 'resolved') {
                expect(
                  await reaches(env, { ...allowed, host: name }),
                  `the allowed name ${name} did not resolve to ${allowed.host} inside, or was not reached`,
                ).toBe(true);
              } else if (enforcement?.names === 'tls-sni') {
                // Matched on TLS server names: let through on TLS only, which the TLS case checks;
                // here, that it resolves inside to what the backend resolves it to.
                const found = await env.exec(['nslookup', '-type=a', name], { timeoutMs: 30_000 });
                expect(
                  found.exitCode === 0 && found.stdout.includes(allowed.host),
                  `the allowed name ${name} did not resolve to ${allowed.host} inside: ${found.stdout}${found.stderr}`,
                ).toBe(true);
              }
              const other = fresh();
              const lookup = await env.exec(['nslookup', '-type=a', other], { timeoutMs: 30_000 });
              expect(lookup.stdout.includes(denied.host) && lookup.exitCode === 0, `${other}, not allowed, resolved: ${lookup.stdout}`).toBe(false);
              expect(resolver.asked(other), `the query for ${other} reached the resolver on ${denied.host}, which the allowlist does not list`).toBe(false);
            });
          } finally {
            await resolver.close();
          }
        }),
    });

    h.defineCase({
      id: 'capabilities.network-allowlist-switch',
      title: 'a sandbox made with networkSwitch moves none -> allowlist -> public -> none, each state holding when setNetwork returns',
      unsupported: missing,
      timeoutMs: 150_000,
      run: () =>
        withListeners(async (allowed, denied) => {
          await h.withEnv({ network: 'none', networkSwitch: true }, async (env) => {
            expect(await reaches(env, allowed), "reached a listener on network 'none'").toBe(false);
            await env.setNetwork({ allow: [`${allowed.host}/32`] });
            expect(await reaches(env, allowed), 'the allowed address was not reached once setNetwork returned').toBe(true);
            expect(await reaches(env, denied), 'an address not in the allowlist was reached').toBe(false);
            await env.setNetwork('public');
            expect(await reaches(env, denied), 'public did not restore the network').toBe(true);
            await env.setNetwork('none');
            expect(await reaches(env, allowed), "reached a listener once back on 'none'").toBe(false);
          });
        }),
    });
  });
}

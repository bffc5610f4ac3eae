import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Environment } from '@berth/core';
import { expect } from 'vitest';
import type { Harness } from '../harness.js';
import type { ServerNameListener } from '../options.js';
import { clientHello, freshName } from '../server-name-listener.js';
import { publicControls } from './network-probes.js';

/**
 * Sends a real ClientHello (Node's TLS client's) naming `name` from inside the sandbox to the
 * listener with busybox nc: true when the listener saw that name. nc's exit says nothing here (a
 * gate or proxy inside accepts the connection before it refuses it).
 */
async function helloReaches(env: Environment, listener: ServerNameListener, name: string, via?: string): Promise<boolean> {
  const hello = (await clientHello(name)).toString('base64');
  // `via`: a name, sent where the sandbox's resolver answers for it (its last Address line), as a client would.
  const target = via ? `"$(nslookup -type=a ${via} | awk '/^Address/ { a = $NF } END { print a }')"` : listener.host;
  await env.exec(`echo ${hello} | base64 -d | nc -w 3 ${target} ${listener.port}`, { timeoutMs: 15_000 });
  // The listener refuses the handshake as soon as it has the name, which can land just after nc ends.
  for (let i = 0; i < 10 && !listener.received(name); i++) await sleep(100);
  return listener.received(name);
}

/**
 * Allowlists whose names are matched on TLS server names (or by a proxy): a ClientHello naming an
 * allowed name reaches a listener on port 443 and one naming another does not, in the same sandbox,
 * after a public sandbox's reached it; with wildcards, a name below `*.domain` does and the domain
 * itself does not (berth's meaning of a wildcard). Fresh names each time, so only that probe counts.
 */
export function allowlistTlsCases(h: Harness): void {
  h.defineCase({
    id: 'capabilities.network-allowlist-tls',
    title:
      "network { allow: [a name, *.domain] } matched on TLS server names: a ClientHello naming the name, or one below the wildcard, reaches a listener on port 443, one naming another name or the wildcard's own domain does not; a public sandbox's reaches it",
    unsupported: () =>
      h.options.serverNameListener ? undefined : 'no serverNameListener option: the case needs a TLS listener on port 443 that public sandboxes reach',
    timeoutMs: 180_000,
    run: async () => {
      const start = h.options.serverNameListener;
      if (!start) throw new Error('unreachable: the case is skipped without serverNameListener');
      const listener = await start();
      try {
        await publicControls(h, [
          [(env) => helloReaches(env, listener, freshName('public.test')), `a public sandbox's ClientHello must reach ${listener.host}:${listener.port}`],
        ]);
        const allowlist = h.backend().capabilities.networkAllowlist;
        const wildcards = allowlist !== false && allowlist.wildcards;
        const exact = freshName('allowed.test');
        const domain = `w${randomBytes(5).toString('hex')}.test`;
        await h.withEnv({ network: { allow: [exact, ...(wildcards ? [`*.${domain}`] : [])] } }, async (env) => {
          const names = env.networkEnforcement.allowlist?.names;
          expect(names).toMatch(/^(tls-sni|proxy)$/);
          // A proxy is reached where the sandbox's DNS sends it (a proxy without a redirect is only
          // there); server names are checked on the wire, to the listener's address. Every
          // ClientHello goes to the allowed name's address: the name it carries is what is matched.
          const via = names === 'proxy' ? exact : undefined;
          expect(await helloReaches(env, listener, exact, via), `a ClientHello naming the allowed ${exact} did not reach the listener`).toBe(true);
          if (wildcards) {
            const below = freshName(domain);
            expect(await helloReaches(env, listener, below, via), `a ClientHello naming ${below}, below *.${domain}, did not reach the listener`).toBe(true);
            expect(await helloReaches(env, listener, domain, via), `a ClientHello naming ${domain} itself passed *.${domain}`).toBe(false);
          }
          const other = freshName('denied.test');
          expect(await helloReaches(env, listener, other, via), `a ClientHello naming ${other}, not allowed, reached the listener`).toBe(false);
        });
      } finally {
        await listener.close();
      }
    },
  });
}

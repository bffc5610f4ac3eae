import type Docker from 'dockerode';
import { ConfigError, type AllowlistEnforcement } from '@berth/core';
import { dockerMessage, statusOf } from './docker-errors.js';
import { BACKEND } from './identity.js';

/**
 * How Docker enforces `network: { allow }`: packet filter rules in the sandbox's own network
 * namespace (egress-tables.ts), written by a short-lived helper container that shares it and alone
 * holds NET_ADMIN (the sandbox never does, so it cannot undo them). Addresses and ranges: every
 * packet out checked by destination, any port. Names and wildcards: by name, at berth's egress
 * proxy (the kit's EgressProxy, listening on the bridge's gateway), where the sandbox's DNS, TLS
 * (443) and HTTP (80) go: a TLS connection passes when its server name is allowed, an HTTP request
 * when its Host is, to that name as berth resolves it; a DNS query is answered for allowed names
 * only. The proxy runs in the runner's process, so names need the engine on this machine. Nothing
 * comes in but replies. A switch replaces berth's chains whole, so packets of connections it no
 * longer allows stop.
 */
export const ALLOWLIST_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'resolved', wildcards: false, dns: 'allowed', connections: 'ended' };
/** With options.egressProxy: names and wildcards matched by name at berth's egress proxy. */
export const PROXY_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'proxy', wildcards: true, dns: 'allowed', connections: 'ended' };

/**
 * Writes `rules` into the sandbox's network namespace with the egress image's `iptables-restore
 * --noflush` (egress-tables.ts), in a helper container sharing it (labelled, removed after). A
 * helper that fails says why.
 */
export async function applyRules(
  docker: Docker,
  sandbox: string,
  image: string,
  rules: string,
  labels: Record<string, string>,
  environmentId: string,
): Promise<void> {
  const helper = await docker.createContainer({
    Image: image,
    Entrypoint: ['iptables-restore', '--noflush', '/berth-egress.rules'],
    Cmd: [],
    Labels: { ...labels },
    HostConfig: { NetworkMode: `container:${sandbox}`, CapAdd: ['NET_ADMIN'], AutoRemove: false },
  });
  try {
    await helper.putArchive(oneFileTar('berth-egress.rules', rules), { path: '/' });
    const refused = (why: string, cause?: unknown) =>
      new ConfigError({
        operation: 'network',
        backend: BACKEND,
        environmentId,
        path: 'options.egressImage',
        message: `the allowlist's rules could not be applied with ${image} (${why}): options.egressImage must have iptables-restore and the kernel its filter and nat tables`,
        ...(cause ? { cause } : {}),
      });
    // An image without iptables-restore fails here, at the engine's exec of the entrypoint.
    await helper.start().catch((error: unknown) => {
      if (statusOf(error) === 400 || /executable file not found|no such file/i.test(dockerMessage(error)))
        throw refused(dockerMessage(error).slice(-300), error);
      throw error;
    });
    const { StatusCode } = (await helper.wait()) as { StatusCode: number };
    if (StatusCode !== 0) {
      const logs = (await helper.logs({ stdout: true, stderr: true }))
        .toString('utf8')
        .replace(/[\x00-\x08]/g, '')
        .trim();
      throw refused(`iptables-restore exited ${StatusCode}: ${logs.slice(-300)}`);
    }
  } finally {
    await helper.remove({ force: true }).catch(() => undefined);
  }
}

/** A ustar archive of one small file (the rules), for the engine's archive API. */
export function oneFileTar(name: string, content: string): Buffer {
  const body = Buffer.from(content, 'utf8');
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) => header.write(value, offset, length, 'ascii');
  const octal = (offset: number, length: number, value: number) => field(offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
  field(0, 100, name);
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, body.length);
  octal(136, 12, Math.floor(Date.now() / 1000));
  field(148, 8, '        ');
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  const sum = header.reduce((total, byte) => total + byte, 0);
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  const padding = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([header, body, padding, Buffer.alloc(1024)]);
}

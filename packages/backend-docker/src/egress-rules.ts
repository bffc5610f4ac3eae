import type Docker from 'dockerode';
import { ConfigError, type AllowlistEnforcement } from '@berth/core';
import { dockerMessage, statusOf } from './docker-errors.js';
import { BACKEND } from './identity.js';

/**
 * How Docker enforces `network: { allow }` (with options.egressImage): packet filter rules in the
 * sandbox's own network namespace, written by a short-lived helper container that shares it and
 * alone holds NET_ADMIN (the sandbox never does, so it cannot undo them). Every packet out is
 * checked by destination (addresses and ranges, any port); hostnames are resolved by berth when
 * the allowlist is applied. The sandbox's resolvers are cut off (the engine's on loopback too), and
 * the allowlist's names are written into its /etc/hosts, so those names resolve inside and no
 * other does. Nothing comes in but replies. A switch replaces the whole table, so packets of
 * connections it no longer allows stop.
 */
export const ALLOWLIST_ENFORCEMENT: AllowlistEnforcement = { addresses: 'packet', names: 'resolved', wildcards: false, dns: 'allowed', connections: 'ended' };

/**
 * iptables-restore input for the sandbox's namespace: loopback, replies and the blocks; nothing
 * else. `nameservers` (its resolv.conf's) on loopback are refused first: the engine's own resolver
 * (127.0.0.11 on a user-defined network) would otherwise answer any name through loopback.
 */
export function allowRules(blocks: readonly string[], nameservers: readonly string[]): string {
  const lines = [
    '*filter',
    ':INPUT ACCEPT [0:0]',
    ':FORWARD DROP [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    '-A INPUT -i lo -j ACCEPT',
    '-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
    '-A INPUT -j DROP',
    ...nameservers.filter((ns) => ns.startsWith('127.')).map((ns) => `-A OUTPUT -d ${ns}/32 -j REJECT`),
    '-A OUTPUT -o lo -j ACCEPT',
    ...blocks.map((cidr) => `-A OUTPUT -d ${cidr} -j ACCEPT`),
    '-A OUTPUT -j REJECT',
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/** The table with no rules: what 'public' is, after an allowlist. */
export const OPEN_RULES = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';

/** The IPv4 nameservers of a resolv.conf. */
export function nameserversOf(resolvConf: string): string[] {
  return [...resolvConf.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1]!);
}

/**
 * Writes `rules` into the sandbox's network namespace with options.egressImage's iptables-restore,
 * in a helper container sharing it (labelled, removed after). A helper that fails says why.
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
    Entrypoint: ['iptables-restore', '/berth-egress.rules'],
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
        message: `the allowlist's rules could not be applied with ${image} (${why}): options.egressImage must have iptables-restore and the kernel its filter table`,
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

// A sandbox container's own packet filter, for allowlists: written by a helper container from
// test/setup/egress-image.sh's image that shares the sandbox's network namespace and alone holds
// NET_ADMIN there. As Modal documents its allowlists: any protocol to the listed CIDRs; TCP to port
// 443 elsewhere, when domains are listed, redirected to the sandbox's TLS gate (sni-gate.ts), whose
// own marked connections go out; DNS still resolving (port 53 to the container's resolvers);
// nothing else out.
import type Docker from 'dockerode';
import { Code, RpcError } from './grpc-server.js';

/** The helpers' image: iptables-restore and sni-gate. */
export const EGRESS_IMAGE = 'berth-test/egress:latest';
/** The mark on the TLS gate's own connections: the filter lets them out. */
export const GATE_MARK = 443;

/** What an allowlist lets out: CIDRs by address, and through the gate on `gatePort` (when domains are listed). */
export interface EgressRules {
  cidrs: readonly string[];
  gatePort?: number;
}

function rules(allow: EgressRules | undefined, nameservers: readonly string[]): string {
  const gate = allow?.gatePort;
  const mark = `-m mark --mark ${GATE_MARK}`;
  const nat = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    ...(gate === undefined
      ? []
      : [
          `-A OUTPUT ${mark} -j RETURN`,
          ...(allow?.cidrs ?? []).map((c) => `-A OUTPUT -d ${c} -j RETURN`),
          `-A OUTPUT -p tcp --dport 443 -j REDIRECT --to-ports ${gate}`,
        ]),
    'COMMIT',
  ];
  if (!allow) return [...nat, '*filter', ':INPUT ACCEPT [0:0]', ':FORWARD ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', 'COMMIT', ''].join('\n');
  return [
    ...nat,
    '*filter',
    ':INPUT ACCEPT [0:0]',
    ':FORWARD DROP [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    '-A OUTPUT -o lo -j ACCEPT',
    // What the nat table redirected to the gate: the rule sees the new address, not yet loopback.
    ...(gate === undefined ? [] : ['-A OUTPUT -d 127.0.0.0/8 -j ACCEPT', `-A OUTPUT ${mark} -j ACCEPT`]),
    ...allow.cidrs.map((c) => `-A OUTPUT -d ${c} -j ACCEPT`),
    ...nameservers.map((ns) => `-A OUTPUT -d ${ns}/32 -p udp --dport 53 -j ACCEPT`),
    '-A OUTPUT -j REJECT',
    'COMMIT',
    '',
  ].join('\n');
}

async function fileOf(container: Docker.Container, path: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of await container.getArchive({ path })) chunks.push(chunk as Buffer);
  const tar = Buffer.concat(chunks);
  const size = Number.parseInt(tar.subarray(124, 136).toString('ascii').replace(/\0.*$/, '').trim() || '0', 8);
  return tar.subarray(512, 512 + size).toString('utf8');
}

function oneFileTar(name: string, content: string): Buffer {
  const body = Buffer.from(content);
  const header = Buffer.alloc(512);
  header.write(name, 0, 100, 'ascii');
  header.write('0000644\0', 100, 8, 'ascii');
  header.write('0000000\0', 108, 8, 'ascii');
  header.write('0000000\0', 116, 8, 'ascii');
  header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124, 12, 'ascii');
  header.write(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, '0')}\0`,
    136,
    12,
    'ascii',
  );
  header.write('        ', 148, 8, 'ascii');
  header.write('0', 156, 1, 'ascii');
  header.write('ustar\0', 257, 6, 'ascii');
  header.write('00', 263, 2, 'ascii');
  header.write(
    `${header
      .reduce((t, b) => t + b, 0)
      .toString(8)
      .padStart(6, '0')}\0 `,
    148,
    8,
    'ascii',
  );
  return Buffer.concat([header, body, Buffer.alloc((512 - (body.length % 512)) % 512), Buffer.alloc(1024)]);
}

/** Writes the filter letting `allow` out (undefined: an empty filter, everything out) into the container's namespace. */
export async function writeFilter(docker: Docker, containerId: string, allow: EgressRules | undefined, labels: Record<string, string>): Promise<void> {
  const resolv = await fileOf(docker.getContainer(containerId), '/etc/resolv.conf').catch(() => '');
  const nameservers = [...resolv.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1]!);
  const helper = await docker.createContainer({
    Image: EGRESS_IMAGE,
    Entrypoint: ['iptables-restore', '/filter.rules'],
    Cmd: [],
    Labels: labels,
    HostConfig: { NetworkMode: `container:${containerId}`, CapAdd: ['NET_ADMIN'] },
  });
  try {
    await helper.putArchive(oneFileTar('filter.rules', rules(allow, nameservers)), { path: '/' });
    await helper.start();
    const { StatusCode } = (await helper.wait()) as { StatusCode: number };
    if (StatusCode !== 0) throw new RpcError(Code.INTERNAL, `the simulator could not write the allowlist's filter (iptables-restore exited ${StatusCode})`);
  } finally {
    await helper.remove({ force: true }).catch(() => undefined);
  }
}

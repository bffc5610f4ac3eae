import type { EgressProxyPorts } from '@berth/core/backend-kit';

/**
 * The iptables-restore input (run with --noflush) for a sandbox's network namespace: berth's own
 * chains, each replaced whole by every write, and the jumps into them from the built-in chains,
 * written once (`hook`) since --noflush keeps what is there. Everything else in the namespace
 * stays as the engine made it: on a user-defined network the engine's resolver (127.0.0.11) works
 * by nat rules of its own there, which a 'public' after an allowlist needs again.
 *
 * filter: loopback, replies and the blocks out; nothing in but replies. The resolv.conf's
 * `nameservers` on loopback are refused first: the engine's resolver would otherwise answer any
 * name through loopback. With a `proxy` (an allowlist with names or wildcards: egress-proxy.ts in
 * the kit), its three ports on its address are let out too, and nat sends there what is not let
 * out by address: DNS (UDP 53, to any resolver, loopback's included, whose source is then
 * masqueraded, loopback not being routable), TLS (TCP 443) and HTTP (TCP 80). Without one, nat's
 * chains are emptied (where they were hooked).
 */
export interface EgressTables {
  blocks: readonly string[];
  nameservers: readonly string[];
  proxy?: EgressProxyPorts;
  /** Whether the filter's jumps are to be written (the first write). */
  hookFilter: boolean;
  /** Whether nat's chains are written, and their jumps with them (the first proxy write). */
  nat: 'hook' | 'write' | 'skip';
}

export const CHAIN_IN = 'BERTH-IN';
export const CHAIN_OUT = 'BERTH-OUT';
export const CHAIN_NAT = 'BERTH-EGRESS';
export const CHAIN_SNAT = 'BERTH-EGRESS-SNAT';

export function egressTables(t: EgressTables): string {
  const p = t.proxy;
  const filter = [
    '*filter',
    `:${CHAIN_IN} - [0:0]`,
    `:${CHAIN_OUT} - [0:0]`,
    `-A ${CHAIN_IN} -i lo -j ACCEPT`,
    `-A ${CHAIN_IN} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT`,
    `-A ${CHAIN_IN} -j DROP`,
    ...(p
      ? [
          `-A ${CHAIN_OUT} -d ${p.host}/32 -p tcp -m multiport --dports ${p.tls},${p.http} -j ACCEPT`,
          `-A ${CHAIN_OUT} -d ${p.host}/32 -p udp --dport ${p.dns} -j ACCEPT`,
        ]
      : []),
    ...t.nameservers.filter((ns) => ns.startsWith('127.')).map((ns) => `-A ${CHAIN_OUT} -d ${ns}/32 -j REJECT`),
    `-A ${CHAIN_OUT} -o lo -j ACCEPT`,
    ...t.blocks.map((cidr) => `-A ${CHAIN_OUT} -d ${cidr} -j ACCEPT`),
    `-A ${CHAIN_OUT} -j REJECT`,
    ...(t.hookFilter ? [`-A INPUT -j ${CHAIN_IN}`, `-A OUTPUT -j ${CHAIN_OUT}`] : []),
    'COMMIT',
  ];
  return `${[...filter, ...natTable(t)].join('\n')}\n`;
}

/** 'public' after an allowlist: berth's chains emptied (the jumps into them then let everything through). */
export function openTables(natHooked: boolean): string {
  const lines = ['*filter', `:${CHAIN_IN} - [0:0]`, `:${CHAIN_OUT} - [0:0]`, 'COMMIT'];
  if (natHooked) lines.push('*nat', `:${CHAIN_NAT} - [0:0]`, `:${CHAIN_SNAT} - [0:0]`, 'COMMIT');
  return `${lines.join('\n')}\n`;
}

function natTable(t: EgressTables): string[] {
  if (t.nat === 'skip') return [];
  const p = t.proxy;
  const to = (port: number) => `-j DNAT --to-destination ${p!.host}:${port}`;
  return [
    '*nat',
    `:${CHAIN_NAT} - [0:0]`,
    `:${CHAIN_SNAT} - [0:0]`,
    ...(p
      ? [
          // What the allowlist lets out by address goes there as it is, DNS included.
          ...t.blocks.map((cidr) => `-A ${CHAIN_NAT} -d ${cidr} -j RETURN`),
          `-A ${CHAIN_NAT} -p udp --dport 53 ${to(p.dns)}`,
          // The sandbox's own servers on loopback stay its own.
          `-A ${CHAIN_NAT} -o lo -j RETURN`,
          `-A ${CHAIN_NAT} -p tcp --dport 443 ${to(p.tls)}`,
          `-A ${CHAIN_NAT} -p tcp --dport 80 ${to(p.http)}`,
          `-A ${CHAIN_SNAT} -s 127.0.0.0/8 -d ${p.host}/32 -j MASQUERADE`,
        ]
      : []),
    ...(t.nat === 'hook' ? [`-I OUTPUT 1 -j ${CHAIN_NAT}`, `-I POSTROUTING 1 -j ${CHAIN_SNAT}`] : []),
    'COMMIT',
  ];
}

/** The IPv4 nameservers of a resolv.conf. */
export function nameserversOf(resolvConf: string): string[] {
  return [...resolvConf.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1]!);
}

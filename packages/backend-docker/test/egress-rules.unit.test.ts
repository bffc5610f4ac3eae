import { describe, expect, it } from 'vitest';
import { egressTables, nameserversOf, openTables } from '../src/egress-tables.js';

const nameservers = nameserversOf('search example.test\nnameserver 127.0.0.11\nnameserver 10.0.0.53\noptions ndots:0\n');
const proxy = { host: '172.17.0.1', tls: 40001, http: 40002, dns: 40003 };

describe("an allowlist's packet filter", () => {
  it("lets out loopback, replies and the blocks in berth's chains, hooked on the first write only; refuses a loopback resolver before loopback is let out", () => {
    expect(nameservers).toEqual(['127.0.0.11', '10.0.0.53']);
    const first = egressTables({ blocks: ['10.1.0.0/16', '10.2.0.5/32'], nameservers, hookFilter: true, nat: 'skip' });
    expect(first).toBe(
      [
        '*filter',
        ':BERTH-IN - [0:0]',
        ':BERTH-OUT - [0:0]',
        '-A BERTH-IN -i lo -j ACCEPT',
        '-A BERTH-IN -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
        '-A BERTH-IN -j DROP',
        '-A BERTH-OUT -d 127.0.0.11/32 -j REJECT',
        '-A BERTH-OUT -o lo -j ACCEPT',
        '-A BERTH-OUT -d 10.1.0.0/16 -j ACCEPT',
        '-A BERTH-OUT -d 10.2.0.5/32 -j ACCEPT',
        '-A BERTH-OUT -j REJECT',
        '-A INPUT -j BERTH-IN',
        '-A OUTPUT -j BERTH-OUT',
        'COMMIT',
        '',
      ].join('\n'),
    );
    const again = egressTables({ blocks: ['10.1.0.0/16'], nameservers, hookFilter: false, nat: 'skip' });
    expect(again).not.toMatch(/-A (INPUT|OUTPUT) /);
    expect(again).not.toMatch(/\*nat/);
  });

  it("with the proxy: its ports let out, and DNS, TLS and HTTP not let out by address sent to it; the sandbox's own loopback servers kept", () => {
    const rules = egressTables({ blocks: ['10.1.0.0/16'], nameservers, proxy, hookFilter: true, nat: 'hook' });
    expect(rules).toContain(
      '-A BERTH-OUT -d 172.17.0.1/32 -p tcp -m multiport --dports 40001,40002 -j ACCEPT\n-A BERTH-OUT -d 172.17.0.1/32 -p udp --dport 40003 -j ACCEPT\n',
    );
    const nat = rules.slice(rules.indexOf('*nat'));
    expect(nat).toBe(
      [
        '*nat',
        ':BERTH-EGRESS - [0:0]',
        ':BERTH-EGRESS-SNAT - [0:0]',
        '-A BERTH-EGRESS -d 10.1.0.0/16 -j RETURN',
        '-A BERTH-EGRESS -p udp --dport 53 -j DNAT --to-destination 172.17.0.1:40003',
        '-A BERTH-EGRESS -o lo -j RETURN',
        '-A BERTH-EGRESS -p tcp --dport 443 -j DNAT --to-destination 172.17.0.1:40001',
        '-A BERTH-EGRESS -p tcp --dport 80 -j DNAT --to-destination 172.17.0.1:40002',
        '-A BERTH-EGRESS-SNAT -s 127.0.0.0/8 -d 172.17.0.1/32 -j MASQUERADE',
        '-I OUTPUT 1 -j BERTH-EGRESS',
        '-I POSTROUTING 1 -j BERTH-EGRESS-SNAT',
        'COMMIT',
        '',
      ].join('\n'),
    );
    // Addresses only after names: nat's chains emptied, not unhooked.
    const after = egressTables({ blocks: ['10.1.0.0/16'], nameservers, hookFilter: false, nat: 'write' });
    expect(after.slice(after.indexOf('*nat'))).toBe('*nat\n:BERTH-EGRESS - [0:0]\n:BERTH-EGRESS-SNAT - [0:0]\nCOMMIT\n');
  });

  it("'public' empties berth's chains (nat's where it was hooked)", () => {
    expect(openTables(false)).toBe('*filter\n:BERTH-IN - [0:0]\n:BERTH-OUT - [0:0]\nCOMMIT\n');
    expect(openTables(true)).toMatch(/\*nat\n:BERTH-EGRESS - \[0:0\]\n:BERTH-EGRESS-SNAT - \[0:0\]\nCOMMIT\n$/);
  });
});

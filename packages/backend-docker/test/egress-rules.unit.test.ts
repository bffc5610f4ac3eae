import { describe, expect, it } from 'vitest';
import { allowRules, nameserversOf } from '../src/egress-rules.js';

describe("an allowlist's packet filter", () => {
  it('lets out loopback, replies and the blocks; refuses a loopback resolver before loopback is let out, and leaves others to the final REJECT', () => {
    const nameservers = nameserversOf('search example.test\nnameserver 127.0.0.11\nnameserver 10.0.0.53\noptions ndots:0\n');
    expect(nameservers).toEqual(['127.0.0.11', '10.0.0.53']);
    expect(allowRules(['10.1.0.0/16', '10.2.0.5/32'], nameservers)).toBe(
      [
        '*filter',
        ':INPUT ACCEPT [0:0]',
        ':FORWARD DROP [0:0]',
        ':OUTPUT ACCEPT [0:0]',
        '-A INPUT -i lo -j ACCEPT',
        '-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
        '-A INPUT -j DROP',
        '-A OUTPUT -d 127.0.0.11/32 -j REJECT',
        '-A OUTPUT -o lo -j ACCEPT',
        '-A OUTPUT -d 10.1.0.0/16 -j ACCEPT',
        '-A OUTPUT -d 10.2.0.5/32 -j ACCEPT',
        '-A OUTPUT -j REJECT',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });
});

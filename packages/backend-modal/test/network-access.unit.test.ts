// berth's networks as Modal's NetworkAccess: an allowlist's addresses and ranges become CIDRs (an
// address a /32), its names and wildcards domains; a sandbox with one is made with it, not blocked.
import { describe, expect, it } from 'vitest';
import { parseEnvironmentSpec } from '@berth/core';
import { createdNetwork, switchedAccess } from '../src/network-access.js';

describe('Modal network access', () => {
  it('an allowlist is an ALLOWLIST of CIDRs and domains, at create and at a switch', () => {
    const spec = parseEnvironmentSpec({ image: 'x', network: { allow: ['10.1.2.3', '10.0.0.0/8', 'API.test', '*.pypi.org'] } });
    const access = { network_access_type: 'ALLOWLIST', allowed_cidrs: ['10.1.2.3/32', '10.0.0.0/8'], allowed_domains: ['api.test', '*.pypi.org'] };
    expect(createdNetwork(spec)).toEqual({ block_network: false, network_access: access });
    expect(switchedAccess(spec.network)).toEqual(access);
    expect(switchedAccess({ allow: [] })).toEqual({ network_access_type: 'ALLOWLIST', allowed_cidrs: [], allowed_domains: [] });
  });

  it("'none' and 'public' keep Modal's plainest forms unless the sandbox switches", () => {
    expect(createdNetwork(parseEnvironmentSpec({ image: 'x', network: 'none' }))).toEqual({
      block_network: true,
      network_access: { network_access_type: 'BLOCKED' },
    });
    expect(createdNetwork(parseEnvironmentSpec({ image: 'x', network: 'public' }))).toEqual({
      block_network: false,
      network_access: { network_access_type: 'OPEN' },
    });
  });
});

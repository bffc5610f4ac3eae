// spec.network: { allow } — entries validated with harbor's kinds and words that say how to write
// them; a backend that cannot enforce what is asked refuses it by name before any I/O, at
// environment() and at setNetwork(). Enforcement itself is the backends' (conformance).
import { describe, expect, it } from 'vitest';
import type { AllowlistEnforcement, Capabilities } from '../src/contract.js';
import { CapabilityError, ConfigError } from '../src/errors.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import { assertSupported } from '../src/kit/capabilities.js';
import { addressAllowed, allowEntries, nameAllowed, parseAllowEntry } from '../src/network-allowlist.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('allowlist entries', () => {
  it.each([
    ['Example.COM.', { kind: 'host', host: 'example.com' }],
    ['*.Example.com', { kind: 'wildcard', suffix: 'example.com' }],
    [' 10.1.2.3 ', { kind: 'address', address: '10.1.2.3' }],
    ['10.0.0.0/8', { kind: 'range', cidr: '10.0.0.0/8', address: '10.0.0.0', prefix: 8 }],
    ['0.0.0.0/0', { kind: 'range', cidr: '0.0.0.0/0', address: '0.0.0.0', prefix: 0 }],
    ['localhost', { kind: 'host', host: 'localhost' }],
  ])('%s is %j', (entry, parsed) => {
    expect(parseAllowEntry(entry)).toEqual(parsed);
  });

  it.each([
    ['', /empty/],
    ['example.com:443', /a port cannot be listed/],
    ['https://example.com', /not URLs, ports or paths/],
    ['[::1]', /not URLs, ports or paths/],
    ['10.0.0.1/8', /host bits set; write the network address \(e\.g\. 10\.0\.0\.0\/8\)/],
    ['10.0.0.0/33', /not URLs, ports or paths/],
    ['2001:db8::1', /IPv6 addresses are not supported/],
    ['2001:db8::/32', /IPv6 ranges are not supported/],
    ['*example.com', /one leading "\*\." before a domain/],
    ['a.*.com', /one leading "\*\." before a domain/],
    ['*.', /one leading "\*\." before a domain/],
    ['*', /one leading "\*\." before a domain/],
    ['*.1.2.3.4', /names a domain, not an IP address/],
    ['999.1.1.1', /not an IPv4 address/],
    ['under_score.com', /labels of letters, digits and inner hyphens/],
  ])('%j is refused: %s', (entry, says) => {
    const parsed = parseAllowEntry(entry);
    expect('problem' in parsed && parsed.problem).toMatch(says);
  });

  it('a wildcard matches names below its domain at any depth, not the domain itself; ranges match by prefix', () => {
    const entries = allowEntries({ allow: ['*.example.com', 'api.test', '10.0.0.0/8', '192.168.1.7'] });
    expect(nameAllowed('a.example.com', entries)).toBe(true);
    expect(nameAllowed('a.b.example.com', entries)).toBe(true);
    expect(nameAllowed('example.com', entries)).toBe(false);
    expect(nameAllowed('notexample.com', entries)).toBe(false);
    expect(nameAllowed('API.test.', entries)).toBe(true);
    expect(addressAllowed('10.255.0.1', entries)).toBe(true);
    expect(addressAllowed('11.0.0.1', entries)).toBe(false);
    expect(addressAllowed('192.168.1.7', entries)).toBe(true);
    expect(addressAllowed('192.168.1.8', entries)).toBe(false);
    expect(addressAllowed('1.2.3.4', allowEntries({ allow: ['0.0.0.0/0'] }))).toBe(true);
  });
});

describe('spec.network', () => {
  it('takes { allow }, normalised and without duplicates; an empty list is valid (nothing gets out)', () => {
    expect(parseEnvironmentSpec({ image: 'x', network: { allow: ['A.test', 'a.test.', '10.0.0.0/8'] } }).network).toEqual({ allow: ['a.test', '10.0.0.0/8'] });
    expect(parseEnvironmentSpec({ image: 'x', network: { allow: [] } }).network).toEqual({ allow: [] });
  });

  it('a bad entry is a ConfigError naming its index and how to write it', () => {
    const error = thrown(() => parseEnvironmentSpec({ image: 'x', network: { allow: ['ok.test', 'example.com:443'] } }));
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'spec.network.allow[1]' });
    expect((error as Error).message).toMatch(/spec\.network\.allow\[1\] "example\.com:443": .*a port cannot be listed/);
  });

  it('a network of another shape says the three it takes', () => {
    for (const network of ['open', { hosts: ['a'] }, 3]) {
      const error = thrown(() => parseEnvironmentSpec({ image: 'x', network }));
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/spec\.network is 'none', 'public' or \{ allow: \[\.\.\.\] \}/);
    }
  });
});

const BY_ADDRESS: AllowlistEnforcement = { addresses: 'packet', names: false, wildcards: false, dns: 'none', connections: 'kept' };
const RESOLVED: AllowlistEnforcement = { ...BY_ADDRESS, names: 'resolved' };
const caps = (networkAllowlist: AllowlistEnforcement | false): Capabilities => ({
  gpus: false,
  gpuTypes: false,
  networkModes: ['public', 'none'],
  networkAllowlist,
  networkSwitch: true,
  imageAuth: [],
  mounts: [],
  execUser: false,
  tty: false,
  imageBuild: false,
  snapshot: false,
  services: false,
  resourceLimits: { cpus: false, memory: false, storage: false },
});

describe('what a backend cannot enforce is refused by name', () => {
  it.each([
    [false, ['10.0.0.1'], 'network.allowlist', /cannot enforce an egress allowlist \(spec\.network\)/],
    [BY_ADDRESS, ['10.0.0.1', 'api.test'], 'network.allowlist.names', /by address only and cannot allow a hostname \(api\.test\)/],
    [RESOLVED, ['*.api.test'], 'network.allowlist.wildcards', /cannot enforce wildcard entries \(\*\.api\.test\): it resolves names to addresses/],
  ] as const)('%j with %j: %s', (enforcement, allow, capability, says) => {
    const error = thrown(() => assertSupported(parseEnvironmentSpec({ image: 'x', network: { allow: [...allow] } }), caps(enforcement), 'test'));
    expect(CapabilityError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ capability });
    expect((error as Error).message).toMatch(says);
  });

  it('what it can enforce passes', () => {
    expect(() => assertSupported(parseEnvironmentSpec({ image: 'x', network: { allow: ['10.0.0.0/8', 'api.test'] } }), caps(RESOLVED), 'test')).not.toThrow();
  });

  it('setNetwork refuses the same before the backend is asked, and a malformed mode is a ConfigError on mode', async () => {
    const transport = new LocalTransport();
    const asked: unknown[] = [];
    Object.assign(transport, { setNetwork: async (mode: unknown) => void asked.push(mode) });
    const env = new SandboxEnvironment({
      backend: 'local',
      id: `local-${Math.random().toString(16).slice(2, 8)}`,
      spec: parseEnvironmentSpec({ image: 'local:latest', networkSwitch: true }),
      transport,
      transfers: 'exec',
      capabilities: { networkModes: ['public', 'none'], networkAllowlist: BY_ADDRESS, networkSwitch: true },
    });
    await env.start();
    try {
      expect(env.networkEnforcement).toEqual({ allowlist: BY_ADDRESS, switches: true });
      const byName = await env.setNetwork({ allow: ['api.test'] }).catch((e: unknown) => e);
      expect(CapabilityError.isInstance(byName), String(byName)).toBe(true);
      expect((byName as Error).message).toMatch(/cannot allow a hostname \(api\.test\) \(mode\)/);
      const malformed = await env.setNetwork({ allow: ['10.0.0.1:80'] }).catch((e: unknown) => e);
      expect(ConfigError.isInstance(malformed), String(malformed)).toBe(true);
      expect((malformed as Error).message).toMatch(/setNetwork: mode\.allow\[0\] "10\.0\.0\.1:80"/);
      expect(asked).toEqual([]);
      await env.setNetwork({ allow: ['10.0.0.0/8'] });
      await env.setNetwork({ allow: ['10.0.0.0/8'] });
      expect(asked).toEqual([{ allow: ['10.0.0.0/8'] }]);
      expect(env.network).toEqual({ allow: ['10.0.0.0/8'] });
    } finally {
      await env.teardown();
    }
  });
});

// berth's egress proxy pod's parts that need no cluster: its option's shape, the policy rule that
// lets a sandbox reach it, the resolv.conf it writes, and the kit's proxy as the pod runs it (its
// own address in DNS answers, admissions looked up per query), on loopback.
import { Resolver } from 'node:dns/promises';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { EgressProxy, resolvConfAt } from '@berth/core/backend-kit';
import { createK8sBackend } from '@berth/backend-k8s';
import { allowEntries } from '@berth/core';
import { egressPolicyManifest } from '../src/egress-policy.js';

describe('options.egressProxy', () => {
  it('claims names and wildcards matched by a proxy; without it, names resolved and no wildcards', () => {
    expect(createK8sBackend({ egressProxy: true }).capabilities.networkAllowlist).toMatchObject({ names: 'proxy', wildcards: true });
    expect(createK8sBackend({ egressProxy: { image: 'mirror/node:20' } }).capabilities.networkAllowlist).toMatchObject({ names: 'proxy' });
    expect(createK8sBackend({}).capabilities.networkAllowlist).toMatchObject({ names: 'resolved', wildcards: false });
  });

  it.each([
    [{ imag: 'node:20' }, /imag/],
    [{ image: '' }, /has image "" \(an image reference\)/],
    [{ nameservers: '10.0.0.10' }, /has nameservers "10\.0\.0\.10" \(a list of host or host:port\)/],
    ['yes', /egressProxy is "yes": give true, or \{ image\?: string, nameservers\?: string\[\] \}/],
  ])('refuses %j before any I/O, naming the option', (egressProxy, message) => {
    const error = (() => {
      try {
        createK8sBackend({ egressProxy: egressProxy as never });
      } catch (e) {
        return e;
      }
    })();
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: expect.stringMatching(/^options\.egressProxy/) });
    expect((error as Error).message).toMatch(message);
  });
});

describe("the sandbox's policy under the proxy", () => {
  it('lets it reach its listed blocks, and the proxy pod by name on DNS, HTTP and TLS only', () => {
    const policy = egressPolicyManifest({ namespace: 'ns', pod: 'p', podUid: 'u', blocks: ['10.1.2.3/32'], labels: {}, proxy: 'berth-egress-1' });
    expect(policy.spec?.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.1.2.3/32' } }] },
      {
        to: [{ podSelector: { matchLabels: { 'berth.egress-proxy': 'true', 'berth.environment': 'berth-egress-1' } } }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
          { protocol: 'TCP', port: 80 },
          { protocol: 'TCP', port: 443 },
        ],
      },
    ]);
  });

  it("resolv.conf: the proxy as the only resolver; the kubelet's search domains dropped on request, kept by default", () => {
    const kubelet = 'search ns.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n';
    expect(resolvConfAt(kubelet, '10.244.0.9', { search: false })).toBe('nameserver 10.244.0.9\n');
    expect(resolvConfAt(kubelet, '10.244.0.9')).toBe('nameserver 10.244.0.9\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n');
  });
});

describe('the kit proxy as the pod runs it', () => {
  it("answers an admitted source's allowed names with its own address (a name that does not resolve: NXDOMAIN), refuses other names and other sources", async () => {
    const upstream = async (name: string) => {
      if (name.endsWith('.nowhere.test')) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
      return ['192.0.2.7'];
    };
    let admitted: string | undefined = '127.0.0.1';
    const proxy = await EgressProxy.listen('127.0.0.1', {
      answerWith: '10.244.0.9',
      admissions: (source) => (source === admitted ? { entries: allowEntries({ allow: ['*.ok.test', 'x.nowhere.test'] }), resolve: upstream } : undefined),
    });
    try {
      const resolver = new Resolver({ timeout: 2000, tries: 1 });
      resolver.setServers([`127.0.0.1:${proxy.ports.dns}`]);
      expect(await resolver.resolve4('a.ok.test')).toEqual(['10.244.0.9']);
      await expect(resolver.resolve4('x.nowhere.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
      await expect(resolver.resolve4('ok.test')).rejects.toMatchObject({ code: 'EREFUSED' });
      admitted = undefined;
      await expect(resolver.resolve4('a.ok.test'), 'a source withdrawn is refused at its next query').rejects.toMatchObject({ code: 'EREFUSED' });
    } finally {
      await proxy.close();
    }
  });
});

// harbor's network_mode = "allowlist" with allowed_hosts: loaded as berth's { allow } per phase,
// each entry checked as harbor does and refused by field when wrong; a sandbox whose phases differ
// is made to switch. Whether a backend enforces it is its capability (refused by name at
// environment(): core's network-allowlist tests; enforced for real: backend-k8s's allowlist test).
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { buildSpec, loadHarborTask } from '@berth/harbor';
import type { Capabilities } from '@berth/core';
import { tempDir, writeTask } from './support.js';

const roots: string[] = [];
afterAll(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});
async function load(toml: string) {
  const root = await tempDir('allowlist');
  roots.push(root);
  return loadHarborTask(await writeTask(root, 'task', { toml }));
}
const k8s = {
  name: 'k8s',
  capabilities: { resourceLimits: { cpus: true, memory: true, storage: true }, networkSwitch: true, execUser: true } as Capabilities,
};

describe('harbor allowlists', () => {
  it('[environment] allowlist is the sandbox network; [agent] and [verifier] override it per phase, and the sandbox switches', async () => {
    const task = await load(
      `[environment]\ndocker_image = "x:1"\nnetwork_mode = "allowlist"\nallowed_hosts = ["PyPI.org.", "10.0.0.0/8"]\n[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["api.test"]\n[verifier]\nnetwork_mode = "no-network"\n`,
    );
    expect(task.network).toEqual({ environment: { allow: ['pypi.org', '10.0.0.0/8'] }, agent: { allow: ['api.test'] }, verifier: 'none' });
    const { spec } = buildSpec(task, k8s);
    expect(spec).toMatchObject({ network: { allow: ['pypi.org', '10.0.0.0/8'] }, networkSwitch: true });
  });

  it('the same allowlist in every phase does not switch; an empty one is allowed (nothing gets out)', async () => {
    const same = await load(
      `[environment]\ndocker_image = "x:1"\nnetwork_mode = "allowlist"\nallowed_hosts = ["a.test", "b.test"]\n[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["b.test", "a.test"]\n`,
    );
    expect(same.network.agent).toEqual({ allow: ['b.test', 'a.test'] });
    expect(buildSpec(same, k8s).spec).not.toHaveProperty('networkSwitch');
    const empty = await load(`[environment]\ndocker_image = "x:1"\nnetwork_mode = "allowlist"\n`);
    expect(empty.network.environment).toEqual({ allow: [] });
  });

  it.each([
    ['environment', `network_mode = "allowlist"\nallowed_hosts = ["example.com:443"]`, 'environment.allowed_hosts[0]', /a port cannot be listed/],
    ['environment', `network_mode = "allowlist"\nallowed_hosts = ["ok.test", "10.0.0.1/8"]`, 'environment.allowed_hosts[1]', /host bits set/],
    [
      'environment',
      `network_mode = "public"\nallowed_hosts = ["a.test"]`,
      'environment.allowed_hosts',
      /only valid with environment\.network_mode = "allowlist"/,
    ],
  ])('[%s] %s is a ConfigError on %s', async (_table, lines, field, says) => {
    const error = await load(`[environment]\ndocker_image = "x:1"\n${lines}\n`).catch((e: unknown) => e);
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toContain(field);
    expect((error as Error).message).toMatch(says);
  });

  it('a baseline table may carry an empty allowed_hosts beside "public", as harbor lets it', async () => {
    const task = await load(`[environment]\ndocker_image = "x:1"\nnetwork_mode = "public"\nallowed_hosts = []\n`);
    expect(task.network.environment).toBe('public');
  });
});

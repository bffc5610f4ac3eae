// The kit's one way to define a backend: environment(), start(), the preflight skeleton and the
// sweep loop come from the kit; the definition supplies only its engine's calls.
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError } from '../src/errors.js';
import { defineBackend, type BackendDefinition, type ManagedResource } from '../src/kit/define-backend.js';
import { checkFactoryOptions } from '../src/kit/common-options.js';
import { LABEL_CREATED, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID } from '../src/labels.js';
import type { Capabilities } from '../src/contract.js';
import type { CreateContext } from '../src/kit/transport.js';
import { LocalTransport } from './support/local-transport.js';

const CAPABILITIES: Capabilities = {
  gpus: false,
  gpuTypes: false,
  networkModes: ['public', 'none'],
  networkSwitch: false,
  networkAllowlist: false,
  imageAuth: [],
  mounts: [],
  imageBuild: false,
  execUser: false,
  tty: false,
  resourceLimits: { cpus: true, memory: true, storage: false },
  snapshot: false,
  services: false,
};

function definition(over: Partial<BackendDefinition> = {}): BackendDefinition {
  return {
    name: 'local',
    capabilities: CAPABILITIES,
    hints: { 'resources.storage': 'leave it unset on local' },
    options: {},
    transfers: 'exec',
    target: () => 'this machine',
    transport: () => new LocalTransport(),
    checkApi: async () => [{ name: 'api', status: 'ok', message: 'here' }],
    listManaged: async () => [],
    ...over,
  };
}

const labels = (pid: number, extra: Record<string, string> = {}) => ({
  [LABEL_MANAGED]: 'true',
  [LABEL_OWNER_PID]: String(pid),
  [LABEL_OWNER_HOST]: hostname(),
  [LABEL_CREATED]: String(Date.now()),
  ...extra,
});

describe('defineBackend', () => {
  it("makes environments: spec parsed, capabilities refused with the hint, ids with namePrefix, labels merged under berth's", async () => {
    // What the engine is asked to label the sandbox with, as the transport's create sees it.
    const created: Array<Readonly<Record<string, string>>> = [];
    const transport = () => {
      const local = new LocalTransport();
      const create = local.create.bind(local);
      // The transport's create takes the context; LocalTransport's own ignores it.
      (local as { create: (ctx: CreateContext) => Promise<void> }).create = async (ctx: CreateContext) => {
        created.push(ctx.labels);
        return create();
      };
      return local;
    };
    const backend = defineBackend(definition({ transport, options: { namePrefix: 'evals', labels: { team: 'a', [LABEL_MANAGED]: 'no' } } }));
    expect(backend.target).toBe('this machine');
    expect(() => backend.environment({ image: 'x', resources: { storageMb: 10 } })).toThrow(CapabilityError);
    expect(() => backend.environment({ image: 'x', resources: { storageMb: 10 } })).toThrow(/leave it unset on local/);
    expect(() => backend.environment({ image: '', network: 'public' })).toThrow(ConfigError);
    // start() rejects (never throws synchronously) on a refused spec.
    const refused = backend.start({ image: '' });
    expect(refused).toBeInstanceOf(Promise);
    await expect(refused).rejects.toThrow(ConfigError);
    const env = await backend.start({ image: 'local:latest', network: 'none', labels: { run: 'r1', team: 'spec' } });
    try {
      expect(env.id).toMatch(/^evals-/);
      expect(env.backend).toBe('local');
      expect((await env.exec(['echo', 'hi'])).stdout).toBe('hi\n');
      // The spec's and the backend's labels are there (the backend's over the spec's: options.labels
      // are the operator's); berth's own win over both.
      expect(created).toHaveLength(1);
      expect(created[0]).toMatchObject({ team: 'a', run: 'r1', [LABEL_MANAGED]: 'true', [LABEL_OWNER_PID]: String(process.pid), 'berth.environment': env.id });
    } finally {
      await env.teardown();
    }
  });

  it('preflight: the API first (a failure, or a throw, ends it), then the spec, then what the spec needs', async () => {
    const seen: Array<string | undefined> = [];
    const checkSpec = async (spec: { image: unknown } | undefined) => {
      seen.push(spec ? 'spec' : undefined);
      return [{ name: 'image', status: 'ok' as const, message: 'fine' }];
    };
    const ok = await defineBackend(definition({ checkSpec })).preflight({ image: 'local:latest' });
    expect(ok).toMatchObject({ backend: 'local', ok: true });
    expect(ok.checks.map((c) => c.name)).toEqual(['api', 'spec', 'image']);
    expect((await defineBackend(definition({ checkSpec })).preflight()).checks.map((c) => c.name)).toEqual(['api', 'image']);
    expect(seen).toEqual(['spec', undefined]);

    const badSpec = await defineBackend(definition({ checkSpec })).preflight({ image: 'x', resources: { storageMb: 1 } });
    expect(badSpec.ok).toBe(false);
    expect(badSpec.checks.map((c) => [c.name, c.status])).toEqual([
      ['api', 'ok'],
      ['spec', 'fail'],
    ]);

    const down = await defineBackend(definition({ checkSpec, checkApi: async () => Promise.reject(new Error('connect ECONNREFUSED')) })).preflight({
      image: 'x',
    });
    expect(down.checks).toEqual([expect.objectContaining({ name: 'api', status: 'fail', message: 'connect ECONNREFUSED' })]);
    // Neither a refused spec nor a down API got as far as what the spec needs.
    expect(seen).toHaveLength(2);
  });

  it('sweep: the owner rule, dry runs, ownedByThisProcess, and failures reported, never thrown', async () => {
    const removed: string[] = [];
    const resource = (name: string, pid: number, fail?: string): ManagedResource => ({
      name,
      labels: labels(pid),
      remove: async () => {
        if (fail) throw new Error(fail);
        removed.push(name);
      },
      failure: (e) => (e as Error).message,
    });
    // A pid that cannot be alive, and ours.
    const dead = 2 ** 22 + 12345;
    const list = async () => [resource('dead-1', dead), resource('mine', process.pid), resource('dead-2', dead, 'engine said no')];
    const backend = defineBackend(definition({ listManaged: list }));

    const dry = await backend.sweep({ dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, wouldRemove: ['dead-1', 'dead-2'], removed: [] });
    expect(removed).toEqual([]);

    const swept = await backend.sweep();
    expect(swept.removed).toEqual(['dead-1']);
    expect(swept.failed).toEqual([expect.objectContaining({ id: 'dead-2', message: 'engine said no' })]);

    const mine = await backend.sweep({ ownedByThisProcess: true });
    expect(mine.removed).toEqual(['mine']);
  });

  it("adds the backend's own methods, and renamed options are refused naming the new one", () => {
    const backend = defineBackend(definition(), { close: async () => 'closed' });
    expect(typeof backend.close).toBe('function');
    const at = { known: ['probeRegistries'], renamed: { preflightRegistries: 'probeRegistries' }, backend: 'k8s', factory: 'createK8sBackend' };
    expect(() => checkFactoryOptions({ preflightRegistries: [] }, at)).toThrow("createK8sBackend's preflightRegistries option is now probeRegistries");
    expect(() => checkFactoryOptions({ probeRegistries: [] }, at)).not.toThrow();
    // Neither known nor renamed: refused with what was meant.
    expect(() => checkFactoryOptions({ probeRegistry: [] }, at)).toThrow('createK8sBackend has no option "probeRegistry": did you mean probeRegistries?');
  });
});

// The backend-neutral policies of the kit: registry wording to pull reasons, the creation limiter,
// the sweep rule and a sweep's bookkeeping, and capability refusals.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { CapabilityError, ConfigError, ImagePullError } from '../src/errors.js';
import { assertSupported } from '../src/kit/capabilities.js';
import { CreationLimiter } from '../src/kit/creation-limiter.js';
import { notPresentNeverPull, pullFailure, pullReason } from '../src/kit/pull-failure.js';
import { Sweep, isOrphan } from '../src/kit/sweep-rule.js';
import { LABEL_CREATED, LABEL_OWNER_HOST, LABEL_OWNER_PID } from '../src/labels.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import type { Capabilities } from '../src/contract.js';
import { VirtualClock } from '../src/time/clock.js';

describe('pull failure wording', () => {
  it.each([
    ['toomanyrequests: You have reached your pull rate limit', false, 'rate_limited'],
    ['received unexpected HTTP status: 429 Too Many Requests', true, 'rate_limited'],
    ['no basic auth credentials', false, 'unauthorized'],
    ['unauthorized: authentication required', true, 'unauthorized'],
    ['denied: requested access to the resource is denied', true, 'unauthorized'],
    ["pull access denied for foo, repository does not exist or may require 'docker login'", false, 'unauthorized'],
    ["pull access denied for foo, repository does not exist or may require 'docker login'", true, 'not_found'],
    ['manifest for 127.0.0.1:5000/x:nope not found: manifest unknown', true, 'not_found'],
    // a kubelet event and a Modal build log say it their way
    ['Failed to pull image "ghcr.io/o/p:1": failed to resolve reference: ghcr.io/o/p:1: not found', false, 'not_found'],
    ['FetchSpec failed: loading container: file does not exist', false, 'not_found'],
    ['Get "https://127.0.0.1:5001/v2/": dial tcp 127.0.0.1:5001: connect: connection refused', false, 'transient'],
    ['received unexpected HTTP status: 503 Service Unavailable', true, 'transient'],
  ] as const)('%s (credentials: %s) is %s', (message, had, reason) => {
    expect(pullReason(message, had)).toBe(reason);
  });

  it('builds an ImagePullError whose hint says how to pass credentials', () => {
    const anonymous = pullFailure('no basic auth credentials', { backend: 'x', image: 'r/p:1', hadCredentials: false, credentialsHint: 'set registrySecrets' });
    expect(ImagePullError.isInstance(anonymous)).toBe(true);
    expect(anonymous).toMatchObject({ reason: 'unauthorized', category: 'permanent_infra', retryable: false, image: 'r/p:1' });
    expect(anonymous.message).toContain('set registrySecrets');
    const rejected = pullFailure('unauthorized', { backend: 'x', image: 'r/p:1', hadCredentials: true });
    expect(rejected.message).toContain('rejected the credentials');
    expect(pullFailure('503', { backend: 'x', image: 'r/p:1', hadCredentials: true })).toMatchObject({ reason: 'transient', retryable: true });
  });

  it('a malformed reference is a ConfigError on spec.image; never-pull says so', () => {
    const error = pullFailure('invalid reference format: repository name must be lowercase', { backend: 'x', image: 'UPPER', hadCredentials: false });
    expect(ConfigError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ path: 'spec.image' });
    expect(notPresentNeverPull('a:b', { backend: 'x' }).message).toContain("pullPolicy is 'never'");
  });
});

describe('creation limiter', () => {
  it('bounds creations in flight and spaces their starts, in virtual time', async () => {
    const clock = new VirtualClock();
    const limiter = new CreationLimiter({ maxConcurrent: 2, perSecond: 4 }, clock);
    let inFlight = 0;
    let most = 0;
    const starts: number[] = [];
    const create = async (i: number) => {
      starts.push(clock.now());
      inFlight++;
      most = Math.max(most, inFlight);
      await clock.sleep(1000 + i);
      inFlight--;
      return i;
    };
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => limiter.run(() => create(i))));
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(2);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(250);
    expect(limiter.active).toBe(0);
  });

  it('a waiter whose signal fires leaves the queue without taking a slot', async () => {
    const clock = new VirtualClock();
    const limiter = new CreationLimiter({ maxConcurrent: 1 }, clock);
    const first = limiter.run(() => clock.sleep(1000).then(() => 'first'));
    const controller = new AbortController();
    const second = limiter.run(async () => 'second', controller.signal);
    const third = limiter.run(async () => 'third');
    expect(limiter.waiting).toBe(2);
    controller.abort(new Error('gave up'));
    await expect(second).rejects.toThrow('gave up');
    expect(await first).toBe('first');
    expect(await third).toBe('third');
    expect(limiter.active).toBe(0);
  });

  it('a create that hangs gives its slot back when its caller gives up, and waiters are told they wait', async () => {
    const clock = new VirtualClock();
    const limiter = new CreationLimiter({ maxConcurrent: 1 }, clock);
    const giveUp = new AbortController();
    const hung = limiter.run(() => new Promise<never>(() => undefined), giveUp.signal);
    let told = 0;
    const next = limiter.run(
      async () => 'next',
      undefined,
      () => told++,
    );
    expect(told).toBe(1);
    giveUp.abort(new Error('startup deadline'));
    await expect(hung).rejects.toThrow('startup deadline');
    expect(await next).toBe('next');
    expect(limiter.active).toBe(0);
  });

  it('refuses limits that are not positive', () => {
    expect(() => new CreationLimiter({ perSecond: 0 })).toThrow(/creation.perSecond must be a positive number/);
  });
});

describe('sweep rule', () => {
  const host = 'this-host';
  const deadPid = (): number => {
    const child = spawnSync('sh', ['-c', 'echo $$']);
    return Number(child.stdout.toString().trim());
  };

  it("on the owner's host: a dead owner's resource is an orphan, a live owner's is not (unless old enough)", () => {
    const now = 1_000_000;
    const live = { [LABEL_OWNER_PID]: String(process.pid), [LABEL_OWNER_HOST]: host, [LABEL_CREATED]: String(now - 5000) };
    expect(isOrphan(live, { host, now })).toBe(false);
    expect(isOrphan(live, { host, now, olderThanMs: 1000 })).toBe(true);
    expect(isOrphan({ ...live, [LABEL_OWNER_PID]: String(deadPid()) }, { host, now })).toBe(true);
  });

  it('from another host only age decides; the backend may supply the creation time', () => {
    const now = 1_000_000;
    const elsewhere = { [LABEL_OWNER_PID]: String(deadPid()), [LABEL_OWNER_HOST]: 'other-host' };
    expect(isOrphan(elsewhere, { host, now })).toBe(false);
    expect(isOrphan(elsewhere, { host, now, olderThanMs: 60_000, createdAtMs: now - 120_000 })).toBe(true);
    expect(isOrphan(elsewhere, { host, now, olderThanMs: 60_000, createdAtMs: now - 1_000 })).toBe(false);
  });
});

describe('a sweep: the rule, removals, and dry runs', () => {
  const labels = (pid: number) => ({ [LABEL_OWNER_PID]: String(pid), [LABEL_OWNER_HOST]: hostname(), [LABEL_CREATED]: String(Date.now()) });
  const dead = (): number => Number(spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim());

  it('removes orphans; an already-gone one is not a failure, any other failure is reported under its id', async () => {
    const sweep = new Sweep('toy', { olderThanMs: 60_000 });
    expect(sweep.isOrphan(labels(process.pid))).toBe(false);
    expect(sweep.isOrphan(labels(dead()))).toBe(true);
    const removed: string[] = [];
    await sweep.remove({ name: 'box-1', remove: async () => removed.push('box-1'), failure: () => 'unexpected' });
    await sweep.remove({ name: 'box-2', remove: () => Promise.reject(new Error('404')), failure: () => undefined });
    await sweep.remove({ name: 'box-3', id: 'id-3', remove: () => Promise.reject(new Error('503')), failure: (e) => `failed: ${(e as Error).message}` });
    expect(removed).toEqual(['box-1']);
    expect(sweep.report).toEqual({ backend: 'toy', removed: ['box-1'], failed: [{ id: 'id-3', message: 'failed: 503' }] });
  });

  it('ownedByThisProcess: only what this live process made, nothing of another process, dead or alive', () => {
    const sweep = new Sweep('toy', { ownedByThisProcess: true });
    expect(sweep.isOrphan(labels(process.pid))).toBe(true);
    expect(sweep.isOrphan(labels(dead()))).toBe(false);
    expect(sweep.isOrphan(labels(process.ppid))).toBe(false);
    expect(sweep.isOrphan({ ...labels(process.pid), [LABEL_OWNER_HOST]: 'other-host' })).toBe(false);
  });

  it('a dry run removes nothing and lists what it would have removed', async () => {
    const sweep = new Sweep('toy', { dryRun: true });
    let calls = 0;
    for (const name of ['box-1', 'box-2']) await sweep.remove({ name, remove: async () => calls++, failure: () => 'unexpected' });
    expect(calls).toBe(0);
    expect(sweep.report).toEqual({ backend: 'toy', removed: [], failed: [], dryRun: true, wouldRemove: ['box-1', 'box-2'] });
  });
});

describe('capability refusals', () => {
  const caps = {
    gpus: false,
    gpuTypes: false,
    networkModes: ['none'],
    imageAuth: [],
    mounts: ['bind'],
    resourceLimits: { cpus: true, memory: true, storage: false },
    networkSwitch: false,
    networkAllowlist: false,
    imageBuild: false,
    execUser: false,
    tty: false,
    snapshot: false,
    services: false,
  } satisfies Capabilities;
  it.each([
    ['gpus', { resources: { gpus: 1 } }],
    ['network', { network: 'public' }],
    ['resources.storage', { resources: { storageMb: 100 } }],
    ['mounts.image', { mounts: [{ type: 'image', image: 'rt:1', target: '/opt/rt' }] }],
  ])('refuses %s with a CapabilityError naming it and the hint', (capability, extra) => {
    const spec = parseEnvironmentSpec({ image: 'x', ...extra });
    let error: unknown;
    try {
      assertSupported(spec, caps, 'toy', { [capability]: 'do this instead' });
    } catch (e) {
      error = e;
    }
    expect(CapabilityError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ capability, backend: 'toy', message: expect.stringContaining('do this instead') });
  });

  it('a backend with GPUs that cannot choose their model refuses resources.gpuTypes by name, and takes the count alone', () => {
    const withGpus = { ...caps, gpus: true };
    const typed = parseEnvironmentSpec({ image: 'x', network: 'none', resources: { gpus: 1, gpuTypes: ['H100', 'A100-80GB'] } });
    expect(() => assertSupported(typed, withGpus, 'toy', { gpuTypes: 'leave it out' })).toThrow(
      expect.objectContaining({
        capability: 'gpuTypes',
        message: expect.stringMatching(/cannot choose the GPU model \(resources\.gpuTypes: H100, A100-80GB\); leave it out/),
      }),
    );
    expect(() => assertSupported(parseEnvironmentSpec({ image: 'x', network: 'none', resources: { gpus: 1 } }), withGpus, 'toy')).not.toThrow();
  });
});

// The kit's warm pool over a local transport: claims, refills, a sandbox dead while idle, failed
// starts, expiry, close while claims wait, a lifetime that counts from the claim, and pooled().
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { CancelledError, ConfigError, ImagePullError, TaskFailure } from '../src/errors.js';
import { defineBackend, type BackendDefinition } from '../src/kit/define-backend.js';
import type { Capabilities, EnvironmentSpec, NetworkNotice } from '../src/contract.js';
import type { CreateContext } from '../src/kit/transport.js';
import { pooled } from '../src/pool/pooled-backend.js';
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
  resourceLimits: { cpus: false, memory: false, storage: false },
  snapshot: false,
  services: false,
};

/** Sandboxes as an engine would hold them: made, removed, and the spec each was made with. */
class Engine {
  readonly made: Array<{ id: string; spec: EnvironmentSpec; transport: PoolTransport }> = [];
  /** When set, create() waits for it (a slow engine), or fails with what it rejects with. */
  gate: Promise<void> | undefined;
  /** Those whose create was called (an environment made only to check a spec has none). */
  get created() {
    return this.made.filter((m) => m.transport.created);
  }
  get alive(): string[] {
    return this.made.filter((m) => m.transport.faults.running !== false && m.transport.created).map((m) => m.id);
  }
}

class PoolTransport extends LocalTransport {
  created = false;
  /** What create() was given to tell the environment about its network (an allowlist refresh). */
  notify: CreateContext['notify'] | undefined;
  readonly #engine: Engine;
  constructor(engine: Engine) {
    super();
    this.#engine = engine;
  }
  override async create(ctx?: CreateContext): Promise<void> {
    this.notify = ctx?.notify;
    await this.#engine.gate;
    this.created = true;
  }
  override async remove(): Promise<void> {
    this.faults.running = false;
  }
}

function backend(engine: Engine) {
  const def: BackendDefinition = {
    name: 'local',
    capabilities: CAPABILITIES,
    hints: { snapshot: 'snapshot elsewhere' },
    options: {},
    transfers: 'exec',
    target: () => 'this machine',
    transport: (id, spec) => {
      const transport = new PoolTransport(engine);
      engine.made.push({ id, spec, transport });
      return transport;
    },
    checkApi: async () => [],
    listManaged: async () => [],
  };
  return defineBackend(def);
}

const SPEC = { image: 'local:latest' };

describe('warm pools (kit)', () => {
  it('fill starts size sandboxes; a claim hands out a running one at once and the pool refills to size', async () => {
    const engine = new Engine();
    const pool = backend(engine).pool(SPEC, { size: 3 });
    expect(engine.created).toHaveLength(0); // nothing starts before a claim or fill
    await pool.fill();
    expect(pool.stats).toMatchObject({ idle: 3, starting: 0, claimed: 0 });
    const claimed: string[] = [];
    pool.events.on('claimed', (id) => claimed.push(id));
    const env = await pool.claim();
    expect(env.phase).toBe('running');
    expect((await env.exec('echo pooled')).stdout).toBe('pooled\n');
    expect(claimed).toEqual([env.id]);
    // The claim refills on its own: nothing here asks it to.
    await vi.waitFor(() => expect(pool.stats).toMatchObject({ idle: 3, starting: 0, claimed: 1 }), { timeout: 5_000, interval: 5 });
    expect(engine.created).toHaveLength(4);
    await env.teardown();
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it('maxClaims: no sandbox started that no claim will take; after the last claim, no refill; a claim beyond it is still served', async () => {
    const engine = new Engine();
    const pool = backend(engine).pool(SPEC, { size: 3, maxClaims: 2 });
    await pool.fill();
    expect(pool.stats).toMatchObject({ idle: 2, starting: 0 });
    const first = await pool.claim();
    const second = await pool.claim();
    // Give a refill its chance to start anything.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pool.stats).toMatchObject({ idle: 0, starting: 0, claimed: 2 });
    expect(engine.created).toHaveLength(2);
    await pool.fill(); // nothing left to fill for
    const extra = await pool.claim();
    expect(extra.phase).toBe('running');
    expect(engine.created).toHaveLength(3);
    for (const env of [first, second, extra]) await env.teardown();
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it('a sandbox that died while idle is never handed out: removed (event "dead") and the next one claimed', async () => {
    const engine = new Engine();
    const pool = backend(engine).pool(SPEC, { size: 2 });
    await pool.fill();
    const removed: Array<[string, string]> = [];
    pool.events.on('removed', (id, reason) => removed.push([id, reason]));
    const first = engine.created[0]!;
    first.transport.faults.running = false; // killed behind berth's back
    const env = await pool.claim();
    expect(env.id).not.toBe(first.id);
    expect((await env.exec('true')).exitCode).toBe(0);
    await sleep(10);
    expect(removed).toEqual([[first.id, 'dead']]);
    expect(pool.stats.dead).toBe(1);
    await env.teardown();
    await pool.close();
  });

  it("a failed start rejects the oldest waiting claim with the start's own error, and the pool then waits for a claim before trying again", async () => {
    const engine = new Engine();
    const refused = new ImagePullError({ operation: 'start', backend: 'local', reason: 'not_found', image: 'local:latest', message: 'manifest unknown' });
    engine.gate = Promise.reject(refused);
    engine.gate.catch(() => undefined);
    // Faked clocks (advancing with real time too, so the start path runs as usual): an hour is
    // then passed at once below, past any backoff a pool might retry after.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'], shouldAdvanceTime: true });
    const pool = backend(engine).pool(SPEC, { size: 1 });
    const failures: unknown[] = [];
    pool.events.on('failed', (e) => failures.push(e));
    try {
      await expect(pool.claim()).rejects.toBe(refused);
      const made = engine.made.length;
      await vi.advanceTimersByTimeAsync(60 * 60_000);
      expect(engine.made.length, 'no start without a claim after a failure, an hour on').toBe(made);
      expect(pool.stats).toMatchObject({ starting: 0, idle: 0 });
    } finally {
      vi.useRealTimers();
    }
    expect(failures.length).toBeGreaterThan(0);
    engine.gate = undefined;
    const env = await pool.claim();
    expect(env.phase).toBe('running');
    await env.teardown();
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it('close while claims wait: they reject with CancelledError, starts in flight are removed once done, nothing is left', async () => {
    const engine = new Engine();
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const pool = backend(engine).pool(SPEC, { size: 2 });
    const waiting = [pool.claim(), pool.claim()];
    await sleep(20);
    expect(pool.stats.waiting).toBe(2);
    const closed = pool.close();
    for (const claim of waiting) await expect(claim).rejects.toSatisfy((e) => CancelledError.isInstance(e) && /pool was closed/.test(String(e)));
    let done = false;
    void closed.then(() => (done = true));
    await sleep(20);
    expect(done, 'close waits for the starts in flight').toBe(false);
    open();
    await closed;
    expect(engine.made.length).toBeGreaterThan(0);
    expect(engine.alive).toEqual([]);
    await expect(pool.claim()).rejects.toSatisfy((e) => CancelledError.isInstance(e));
  });

  it('a claim aborted by its signal rejects with CancelledError; the sandbox started for it joins the pool', async () => {
    const engine = new Engine();
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const pool = backend(engine).pool(SPEC, { size: 1 });
    const abort = new AbortController();
    const claim = pool.claim({ signal: abort.signal });
    abort.abort();
    await expect(claim).rejects.toSatisfy((e) => CancelledError.isInstance(e));
    open();
    await pool.fill();
    // Started for the pool's size and for the claim: both wait for the next claims.
    expect(pool.stats.idle).toBe(2);
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it('idle sandboxes past maxIdleMs are removed (event "expired") and replaced', async () => {
    const engine = new Engine();
    const pool = backend(engine).pool(SPEC, { size: 1, maxIdleMs: 100 });
    await pool.fill();
    const first = engine.created[0]!.id;
    const removed: Array<[string, string]> = [];
    pool.events.on('removed', (id, reason) => removed.push([id, reason]));
    await sleep(400);
    expect(removed).toContainEqual([first, 'expired']);
    expect(pool.stats.expired).toBeGreaterThan(0);
    const env = await pool.claim();
    expect(env.id).not.toBe(first);
    await env.teardown();
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it("a pooled sandbox's timeouts.lifetimeMs counts from its claim; the engine's deadline is lifetime plus maxIdleMs", async () => {
    const engine = new Engine();
    const pool = backend(engine).pool({ ...SPEC, timeouts: { lifetimeMs: 300 } }, { size: 1, maxIdleMs: 60_000 });
    await pool.fill();
    expect(engine.created[0]!.spec.timeouts.lifetimeMs).toBe(60_300);
    await sleep(400); // idle longer than the lifetime: it has not started counting
    const env = await pool.claim();
    expect(env.spec.timeouts.lifetimeMs).toBe(300);
    expect((await env.exec('true')).exitCode).toBe(0);
    await sleep(450);
    const error = await env.exec('true').catch((e: unknown) => e);
    expect(TaskFailure.isInstance(error) && error.type === 'LifetimeExceeded', String(error)).toBe(true);
    expect(String(error)).toMatch(/lifetime of 300 ms \(timeouts\.lifetimeMs\)/);
    await env.teardown();
    await pool.close();
    expect(engine.alive).toEqual([]);
  });

  it('bad options and specs are ConfigErrors naming them, before anything starts', () => {
    const engine = new Engine();
    const b = backend(engine);
    expect(() => b.pool(SPEC, { size: 0 })).toThrow(/opts\.size|size is a whole number from 1 to 1000; got 0/);
    expect(() => b.pool(SPEC, { size: 2.5 })).toThrow(ConfigError);
    expect(() => b.pool(SPEC, { size: 1, maxIdleMs: -1 })).toThrow(/maxIdleMs/);
    expect(() => b.pool({ image: '' }, { size: 1 })).toThrow(ConfigError);
    expect(engine.made.filter((m) => m.transport.created)).toEqual([]);
  });
});

describe('pooled(backend)', () => {
  it("environment().start() claims from one pool per spec; the id is the claimed sandbox's; close removes what the pools hold", async () => {
    const engine = new Engine();
    const b = pooled(backend(engine), { size: 2 });
    // What to do instead of a missing capability survives the wrapping (the CLI and conformance read it).
    expect(b.hints).toEqual({ snapshot: 'snapshot elsewhere' });
    const env = b.environment(SPEC);
    const provisional = env.id;
    const phases: string[] = [];
    env.events.on('phase', (p) => phases.push(p));
    await env.start();
    expect(env.id).not.toBe(provisional);
    expect(engine.made.map((m) => m.id)).toContain(env.id);
    expect(phases).toEqual(['starting', 'running']);
    expect((await env.exec('echo hi')).stdout).toBe('hi\n');
    // What the claimed sandbox says about its network reaches the pooled environment's listeners.
    const notices: NetworkNotice[] = [];
    env.events.on('network', (n) => notices.push(n));
    engine.made.find((m) => m.id === env.id)?.transport.notify?.({ kind: 'refreshed', hosts: [{ name: 'db.test', addresses: ['127.0.0.9'] }] });
    expect(notices).toEqual([{ kind: 'refreshed', hosts: [{ name: 'db.test', addresses: ['127.0.0.9'] }] }]);
    // The same spec written another way shares the pool; another spec gets its own.
    const again = await b.start({ env: {}, image: 'local:latest' });
    expect(b.pools.size).toBe(1);
    const other = await b.start({ image: 'local:other' });
    expect(b.pools.size).toBe(2);
    for (const e of [env, again, other]) await e.teardown();
    await b.close();
    expect(engine.alive).toEqual([]);
  });

  it('teardown before start removes nothing; teardown while the claim waits settles start() and leaves nothing', async () => {
    const engine = new Engine();
    const b = pooled(backend(engine), { size: 1 });
    expect(await b.environment(SPEC).teardown()).toEqual({ removed: false });
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const env = b.environment(SPEC);
    const started = env.start();
    await sleep(20);
    const down = env.teardown();
    await expect(started).rejects.toSatisfy((e) => CancelledError.isInstance(e));
    await down;
    open();
    await b.close();
    expect(engine.alive).toEqual([]);
  });

  it('prepare runs on each sandbox before a claim gets it; a prepare that throws is a failed start: the sandbox removed, the claim told why', async () => {
    const engine = new Engine();
    const prepared: string[] = [];
    const pool = backend(engine).pool(SPEC, {
      size: 1,
      prepare: async (env) => {
        await env.exec('mkdir -p /tmp/ready');
        prepared.push(env.id);
      },
    });
    const env = await pool.claim();
    expect(prepared).toContain(env.id);
    await env.teardown();
    await pool.close();
    const failing = pooled(backend(engine), {
      size: 1,
      prepare: async () => {
        throw new ConfigError({ operation: 'start', message: 'prepare refused' });
      },
    });
    await expect(failing.start(SPEC)).rejects.toThrow('prepare refused');
    await failing.close();
    expect(engine.alive).toEqual([]);
    expect(() => backend(engine).pool(SPEC, { size: 1, prepare: 'mkdir' as never })).toThrow(/prepare is a function/);
  });
});

// The run's sandbox accounting (issue 20, item 5): report.sandboxes counts what attempts created
// and removed and names every sandbox a teardown could not remove. The sandboxes are the kit's own
// SandboxEnvironment over a LocalTransport (no engine), with the faults each case needs: a remove
// that fails, a create that fails before any request went out.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ImagePullError, SandboxTracker, runTrials, type Environment, type EnvironmentEvents, type RunEvents, type TrialContext } from '../src/index.js';
import { createEvents } from '../src/events.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { CreateOutcome } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

const SECRET = 'password=hunter2-in-the-message';

/** How a task's sandbox misbehaves. */
type Fault = 'none' | 'remove-fails' | 'pull-fails';

class FaultyTransport extends LocalTransport {
  removes = 0;
  readonly #fault: Fault;
  constructor(fault: Fault) {
    super();
    this.#fault = fault;
  }
  override async create(): Promise<void> {
    if (this.#fault === 'pull-fails') {
      throw new ImagePullError({ message: 'pulling local:latest failed: not found', image: 'local:latest', reason: 'not_found', backend: 'local' });
    }
  }
  createOutcome(): CreateOutcome {
    // The pull failed before the request that makes a sandbox: nothing exists.
    return 'not-attempted';
  }
  override async remove(): Promise<void> {
    this.removes++;
    // A plain error (not BackendUnavailableError): the kit does not retry it, so the test is quick.
    if (this.#fault === 'remove-fails') throw new Error(`the engine refused to remove it (${SECRET})`);
  }
}

function environment(id: string, fault: Fault): { env: Environment; transport: FaultyTransport } {
  const transport = new FaultyTransport(fault);
  const env = new SandboxEnvironment({ backend: 'local', id, spec: parseEnvironmentSpec({ image: 'local:latest' }), transport });
  return { env, transport };
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('report.sandboxes', () => {
  it('counts what was created and removed, and names the sandbox whose teardown failed, without its secret', async () => {
    const faults: Record<string, Fault> = { ok: 'none', leaky: 'remove-fails', unpulled: 'pull-fails', forgotten: 'none' };
    const transports = new Map<string, FaultyTransport>();
    const result = await runTrials(Object.keys(faults), async (taskId: string, ctx: TrialContext) => {
      const { env, transport } = environment(`env-${taskId}`, faults[taskId]!);
      transports.set(taskId, transport);
      ctx.sandboxes.track(env);
      try {
        await env.start();
      } finally {
        // The trial that forgets its teardown: the run tears down what it tracked.
        if (taskId !== 'forgotten') await ctx.sandboxes.teardown(env).catch(() => undefined);
      }
      return { reward: 1 };
    });

    expect(result.report.sandboxes).toEqual({
      // ok, leaky and forgotten; the failed pull made nothing.
      created: 3,
      removed: 2,
      notRemoved: [{ id: 'env-leaky', taskId: 'leaky', attempt: 1, backend: 'local', error: expect.stringContaining('the engine refused to remove it') }],
    });
    expect(JSON.stringify(result.report.sandboxes)).not.toContain('hunter2');
    expect(result.report.sandboxes.notRemoved[0]!.error).toContain('[REDACTED]');
    // The run really removed the forgotten one, and never tried to remove what was never made.
    expect(transports.get('forgotten')!.removes).toBe(1);
    expect(transports.get('unpulled')!.removes).toBe(0);
    const records = Object.fromEntries(result.tasks.map((t) => [t.taskId, t.attempts[0]!.sandboxes]));
    expect(records).toEqual({
      ok: { created: 1, removed: 1, notRemoved: [] },
      leaky: { created: 1, removed: 0, notRemoved: [expect.objectContaining({ id: 'env-leaky' })] },
      unpulled: { created: 0, removed: 0, notRemoved: [] },
      forgotten: { created: 1, removed: 1, notRemoved: [] },
    });
  });

  it('normal case: created == removed == the number of attempts', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    let calls = 0;
    const result = await runTrials(
      ids,
      async (taskId: string, ctx: TrialContext) => {
        const { env } = environment(`env-${taskId}-${ctx.attempt}`, 'none');
        ctx.sandboxes.track(env);
        await env.start();
        await ctx.sandboxes.teardown(env);
        // Task 'c' fails its first attempt on infrastructure, so it has two.
        if (taskId === 'c' && ++calls === 1) throw Object.assign(new Error('lost'), { name: 'SandboxLostError' });
        return { reward: 1 };
      },
      { backoff: { initialMs: 1, maxMs: 1 }, retryOn: (f) => f.attempt === 1 },
    );
    expect(result.report.attempts).toBe(6);
    expect(result.report.sandboxes).toEqual({ created: 6, removed: 6, notRemoved: [] });
  });

  it('is zero for trials that track nothing, and their records carry no sandboxes', async () => {
    const result = await runTrials(['x'], async () => ({ reward: 1 }));
    expect(result.report.sandboxes).toEqual({ created: 0, removed: 0, notRemoved: [] });
    expect(result.tasks[0]!.attempts[0]!.sandboxes).toBeUndefined();
  });

  it('adds up over a resumed run: reused attempts bring their counts from the journal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-sandboxes-'));
    dirs.push(dir);
    const journal = join(dir, 'journal.jsonl');
    const trial = async (taskId: string, ctx: TrialContext) => {
      const { env } = environment(`env-${taskId}-${ctx.attempt}`, taskId === 'leaky' ? 'remove-fails' : 'none');
      ctx.sandboxes.track(env);
      await env.start();
      try {
        // 'slow' waits until the run is stopped: its attempt is cancelled, its sandbox torn down.
        if (taskId === 'slow' && ctx.attempt === 1 && !ctx.signal.aborted)
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        ctx.signal.throwIfAborted();
      } finally {
        await ctx.sandboxes.teardown(env).catch(() => undefined);
      }
      return { reward: 1 };
    };
    const tasks = ['leaky', 'slow'];
    const stop = new AbortController();
    const events = createEvents<RunEvents>();
    events.on('attempt:end', (record) => {
      if (record.taskId === 'leaky') stop.abort();
    });
    const first = await runTrials(tasks, trial, { journal, signal: stop.signal, events });
    expect(first.tasks.map((t) => t.status)).toEqual(['scored', 'not_run']);
    expect(first.report.sandboxes).toMatchObject({ created: 2, removed: 1 });

    const second = await runTrials(tasks, trial, { journal });
    expect(second.resume).toMatchObject({ reusedAttempts: 2 });
    // leaky#1 and slow#1 from the journal, slow#2 from this session: cumulative, not per session.
    expect(second.report.sandboxes).toEqual({
      created: 3,
      removed: 2,
      notRemoved: [expect.objectContaining({ id: 'env-leaky-1', taskId: 'leaky', attempt: 1 })],
    });
    const lines = (await readFile(journal, 'utf8')).trim().split('\n');
    expect(lines.filter((l) => l.includes('"sandboxes"'))).toHaveLength(3);
  });
});

describe('SandboxTracker', () => {
  it("does not count an environment never started, and counts by teardown()'s answer, not by phase events", async () => {
    const tracker = new SandboxTracker();
    const { env: unstarted } = environment('never-started', 'none');
    tracker.track(unstarted);
    await tracker.teardown(unstarted);
    // Not made by the kit: it reports no phases; its teardown's answer is what counts.
    const bare = {
      id: 'bare',
      backend: 'fake',
      events: createEvents<EnvironmentEvents>(),
      teardown: async () => ({ removed: true }),
    } as unknown as Environment;
    await tracker.teardown(bare);
    expect(await tracker.settle()).toEqual({ created: 1, removed: 1, notRemoved: [] });
  });

  it('counts right a tracked environment the trial tore down itself, with env.teardown()', async () => {
    const tracker = new SandboxTracker();
    const { env: started, transport } = environment('started', 'none');
    const { env: unstarted } = environment('unstarted', 'none');
    tracker.track(started);
    tracker.track(unstarted);
    await started.start();
    await started.teardown();
    await unstarted.teardown();
    expect(await tracker.settle()).toEqual({ created: 1, removed: 1, notRemoved: [] });
    // settle() asked again, but the removal happened once.
    expect(transport.removes).toBe(1);
  });

  it('keeps the first answer when a removed sandbox is torn down again, and records a retried teardown that succeeds', async () => {
    const tracker = new SandboxTracker();
    const { env } = environment('twice', 'none');
    await env.start();
    await tracker.teardown(env);
    await tracker.teardown(env);
    const flaky = new FaultyTransport('remove-fails');
    const retried = new SandboxEnvironment({ backend: 'local', id: 'retried', spec: parseEnvironmentSpec({ image: 'local:latest' }), transport: flaky });
    await retried.start();
    await expect(tracker.teardown(retried)).rejects.toThrow(/refused to remove/);
    flaky.remove = async () => undefined;
    await tracker.teardown(retried);
    expect(await tracker.settle()).toEqual({ created: 2, removed: 2, notRemoved: [] });
  });
});

// When the kit's teardown removes a sandbox (issue 17, item 7): a sandbox that was never created is
// not removed, so an unreachable backend is not retried for ~25 s for it; one whose create request
// went out may exist, and is removed and retried as before. The transport is the kit's own
// interface (a LocalTransport whose create fails as the test says), not a mocked engine.
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError, type EnvironmentPhase } from '../src/index.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import { refusedBeforeSending } from '../src/kit/network-errors.js';
import type { CreateOutcome } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

const unreachable = (operation: 'start' | 'teardown') =>
  new BackendUnavailableError({
    operation,
    backend: 'local',
    message: 'the engine is unreachable (ENOENT)',
    cause: Object.assign(new Error('connect ENOENT /tmp/nonexistent.sock'), { code: 'ENOENT' }),
  });

/** A transport whose engine is down: create fails with the given outcome, remove fails `removeFailures` times. */
class DownTransport extends LocalTransport {
  removes = 0;
  readonly #outcome: CreateOutcome | undefined;
  readonly #removeFailures: number;
  constructor(outcome: CreateOutcome | undefined, removeFailures = Infinity) {
    super();
    this.#outcome = outcome;
    this.#removeFailures = removeFailures;
    // Without the method, the kit cannot tell and assumes a sandbox may exist.
    if (outcome === undefined) Object.defineProperty(this, 'createOutcome', { value: undefined });
  }
  override async create(): Promise<void> {
    throw unreachable('start');
  }
  createOutcome(): CreateOutcome {
    return this.#outcome!;
  }
  override async remove(): Promise<void> {
    if (++this.removes <= this.#removeFailures) throw unreachable('teardown');
  }
}

function environment(transport: LocalTransport) {
  const env = new SandboxEnvironment({ backend: 'local', id: 'local-removal', spec: parseEnvironmentSpec({ image: 'local:latest' }), transport });
  const phases: Array<[EnvironmentPhase, string | undefined]> = [];
  env.events.on('phase', (phase, detail) => phases.push([phase, detail]));
  return { env, phases };
}

describe('kit teardown of a sandbox that was never created', () => {
  it.each<CreateOutcome>(['refused', 'not-attempted'])('create %s: start fails, teardown removes nothing and returns at once', async (outcome) => {
    const transport = new DownTransport(outcome);
    const { env, phases } = environment(transport);
    await expect(env.start()).rejects.toMatchObject({ type: 'BackendUnavailableError' });
    await env.teardown();
    // Not one removal: neither after the failed start nor in teardown's retries.
    expect(transport.removes).toBe(0);
    expect(env.phase).toBe('stopped');
    expect(phases.at(-1)).toEqual(['stopped', expect.stringMatching(/never created/)]);
  });

  it('an environment never started has nothing to remove', async () => {
    const transport = new DownTransport('not-attempted');
    const { env } = environment(transport);
    await env.teardown();
    expect(transport.removes).toBe(0);
    expect(env.phase).toBe('stopped');
  });

  it.each<[string, CreateOutcome | undefined]>([
    ['a create request sent whose answer was lost', 'unknown'],
    ['a transport that cannot tell', undefined],
  ])('%s may have made a sandbox: removed, and retried while the backend is unreachable', async (_, outcome) => {
    // Fails after the failed start (1) and in teardown's first try (2); teardown's retry removes it (3).
    const transport = new DownTransport(outcome, 2);
    const { env, phases } = environment(transport);
    await expect(env.start()).rejects.toMatchObject({ type: 'BackendUnavailableError' });
    await env.teardown();
    expect(transport.removes).toBe(3);
    expect(phases.at(-1)).toEqual(['stopped', undefined]);
  });

  it('only a connection never made counts as refused before sending', () => {
    const code = (c: string) => Object.assign(new Error(c), { code: c });
    for (const c of ['ECONNREFUSED', 'ENOENT', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN']) expect(refusedBeforeSending(code(c)), c).toBe(true);
    // A reset, a timeout or a host gone may come after the request was sent.
    for (const c of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']) expect(refusedBeforeSending(code(c)), c).toBe(false);
    expect(refusedBeforeSending(new Error('HTTP 500'))).toBe(false);
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { NetworkNotice } from '../src/contract.js';
import { AllowlistRefresh, refreshNamesMs, type ResolvedAllowlist } from '../src/kit/index.js';

const at = (address: string): ResolvedAllowlist => ({ blocks: [`${address}/32`], hosts: [{ name: 'api.test', addresses: [address] }] });

/** Resolves with whatever `answer` holds at each round, and keeps what was applied and said. */
function harness(first: ResolvedAllowlist, everyMs = 20) {
  const state = { answer: first as ResolvedAllowlist | Error, applied: [] as ResolvedAllowlist[], notices: [] as NetworkNotice[], applyMs: 0, applying: false };
  const refresh = new AllowlistRefresh(
    first,
    everyMs,
    async () => {
      if (state.answer instanceof Error) throw state.answer;
      return state.answer;
    },
    async (next) => {
      state.applying = true;
      await sleep(state.applyMs);
      state.applied.push(next);
    },
    (notice) => state.notices.push(notice),
  );
  return { state, refresh };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(10);
  expect(check(), what).toBe(true);
}

describe('AllowlistRefresh', () => {
  it('applies nothing while the names resolve as before, whatever the order', async () => {
    const { state, refresh } = harness({ blocks: ['10.0.0.1/32', '10.0.0.2/32'], hosts: [{ name: 'api.test', addresses: ['10.0.0.1', '10.0.0.2'] }] });
    state.answer = { blocks: ['10.0.0.2/32', '10.0.0.1/32'], hosts: [{ name: 'api.test', addresses: ['10.0.0.2', '10.0.0.1'] }] };
    await sleep(150);
    await refresh.stop();
    expect(state.applied).toEqual([]);
    expect(state.notices).toEqual([]);
  });

  it('applies a change once and says so; a failed round keeps what holds, says why, and the next one recovers', async () => {
    const { state, refresh } = harness(at('10.0.0.1'));
    state.answer = at('10.0.0.9');
    await until(() => state.notices.length > 0, 'the change was said');
    expect(state.applied).toEqual([at('10.0.0.9')]);
    expect(state.notices[0]).toEqual({ kind: 'refreshed', hosts: [{ name: 'api.test', addresses: ['10.0.0.9'] }] });
    state.answer = new Error('resolver down');
    await until(() => state.notices.length > 1, 'the failure was said');
    expect(state.notices[1]).toMatchObject({ kind: 'refresh-failed', error: { message: 'resolver down' } });
    state.answer = at('10.0.0.9');
    await sleep(100);
    // Back to what was applied last: nothing to apply again.
    expect(state.applied).toHaveLength(1);
    await refresh.stop();
  });

  it('stop() waits for a round in flight, and no round starts after it', async () => {
    const { state, refresh } = harness(at('10.0.0.1'));
    state.applyMs = 100;
    state.answer = at('10.0.0.2');
    await until(() => state.applying, 'a round is applying');
    await refresh.stop();
    expect(state.applied).toEqual([at('10.0.0.2')]);
    state.answer = at('10.0.0.3');
    await sleep(100);
    expect(state.applied).toHaveLength(1);
  });

  it('is wanted only for an allowlist with names, when refreshing is on', () => {
    expect(AllowlistRefresh.wanted(at('10.0.0.1'), 60_000)).toBe(true);
    expect(AllowlistRefresh.wanted(at('10.0.0.1'), 0)).toBe(false);
    expect(AllowlistRefresh.wanted({ blocks: ['10.0.0.0/8'], hosts: [] }, 60_000)).toBe(false);
  });
});

describe('options.refreshNamesMs', () => {
  const at = { backend: 'docker', factory: 'createDockerBackend' };
  it('defaults to a minute; 0 turns refreshing off', () => {
    expect(refreshNamesMs({}, at)).toBe(60_000);
    expect(refreshNamesMs({ refreshNamesMs: 0 }, at)).toBe(0);
    expect(refreshNamesMs({ refreshNamesMs: 250 }, at)).toBe(250);
  });
  it.each([-1, 50, 1.5, '60000'])('refuses %j, naming the option', (value) => {
    expect(() => refreshNamesMs({ refreshNamesMs: value as number }, at)).toThrow(
      expect.objectContaining({
        name: 'ConfigError',
        path: 'options.refreshNamesMs',
        message: expect.stringContaining("createDockerBackend's refreshNamesMs is a whole number"),
      }),
    );
  });
});

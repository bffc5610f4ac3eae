// linkSignals (issue 18, item 3): one operation's signal follows its inputs until the operation
// ends, and then leaves nothing on them: a long-lived input's listener count shows it.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkSignals } from '../src/index.js';

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

describe('linkSignals', () => {
  it('fires when any input fires, with that input’s reason, and then leaves the other inputs', () => {
    const run = new AbortController();
    const attempt = new AbortController();
    const link = linkSignals(run.signal, undefined, attempt.signal);
    expect(link.signal.aborted).toBe(false);
    expect([listeners(run.signal), listeners(attempt.signal)]).toEqual([1, 1]);
    const reason = new Error('the attempt was stopped');
    attempt.abort(reason);
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe(reason);
    expect(listeners(run.signal)).toBe(0);
    // The first input to fire decides the reason.
    run.abort(new Error('later'));
    expect(link.signal.reason).toBe(reason);
  });

  it('is aborted at once, with its reason, when an input already is; nothing is left hooked', () => {
    const live = new AbortController();
    const reason = new Error('already over');
    const link = linkSignals(live.signal, AbortSignal.abort(reason));
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe(reason);
    expect(listeners(live.signal)).toBe(0);
  });

  it('after dispose, neither fires nor holds a listener on a long-lived input', () => {
    const longLived = new AbortController();
    const link = linkSignals(longLived.signal);
    let fired = 0;
    link.signal.addEventListener('abort', () => fired++);
    expect(listeners(longLived.signal)).toBe(1);
    link.dispose();
    link.dispose();
    expect(listeners(longLived.signal)).toBe(0);
    longLived.abort(new Error('much later'));
    expect(link.signal.aborted).toBe(false);
    expect(fired).toBe(0);
  });

  it('leaves a long-lived input as it found it after many operations, each disposed (also by Symbol.dispose)', () => {
    const longLived = new AbortController();
    for (let i = 0; i < 1000; i++) {
      const link = linkSignals(longLived.signal);
      if (i % 2) link.dispose();
      else link[Symbol.dispose]();
    }
    expect(listeners(longLived.signal)).toBe(0);
  });

  it('abort() fires it for a reason of the operation’s own and unhooks the inputs, which stay untouched', () => {
    const caller = new AbortController();
    const link = linkSignals(caller.signal);
    const deadline = new Error('startup deadline of 10 ms');
    link.abort(deadline);
    expect(link.signal.reason).toBe(deadline);
    expect(caller.signal.aborted).toBe(false);
    expect(listeners(caller.signal)).toBe(0);
  });

  it('with no inputs (or only undefined ones) is a signal only abort() fires', () => {
    const link = linkSignals(undefined);
    expect(link.signal.aborted).toBe(false);
    link.abort();
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBeInstanceOf(DOMException);
  });
});

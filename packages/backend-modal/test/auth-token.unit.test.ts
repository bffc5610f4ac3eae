// The auth-token manager (src/wire/auth-token.ts) on a fake clock: cached, refreshed ahead of its
// JWT's exp in the background, one fetch in flight, forgotten when refused, never in an error.
import { describe, expect, it } from 'vitest';
import { AuthTokenManager, jwtExpiryMs } from '../src/wire/auth-token.js';

const jwt = (exp: number | undefined, tag = 'x') =>
  `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from(JSON.stringify({ exp, tag })).toString('base64url')}.sig`;

/** A manager on a clock the test moves, whose fetch hands out tokens that live `lifetimeSecs`. */
function setup(lifetimeSecs: number | undefined) {
  let now = 1_000_000_000_000;
  const fetched: string[] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const manager = new AuthTokenManager(
    async () => {
      if (hold) await new Promise<void>((r) => (release = r));
      const token = jwt(lifetimeSecs === undefined ? undefined : Math.floor(now / 1000) + lifetimeSecs, `t${fetched.length}`);
      fetched.push(token);
      return token;
    },
    () => now,
  );
  return {
    manager,
    fetched,
    advance: (ms: number) => (now += ms),
    holdFetches: (on: boolean) => (hold = on),
    release: () => release?.(),
  };
}

describe('AuthTokenManager', () => {
  it("reads a JWT's exp; anything else has none", () => {
    expect(jwtExpiryMs(jwt(1700000000))).toBe(1700000000 * 1000);
    expect(jwtExpiryMs(jwt(undefined))).toBeUndefined();
    expect(jwtExpiryMs('not-a-jwt')).toBeUndefined();
    expect(jwtExpiryMs('a.%%%.c')).toBeUndefined();
  });

  it('fetches once for concurrent callers and caches the token', async () => {
    const s = setup(3600);
    s.holdFetches(true);
    const waiting = [s.manager.get(), s.manager.get(), s.manager.get()];
    await new Promise((r) => setImmediate(r));
    s.release();
    const tokens = await Promise.all(waiting);
    expect(new Set(tokens).size).toBe(1);
    expect(s.manager.fetches).toBe(1);
    s.holdFetches(false);
    expect(await s.manager.get()).toBe(tokens[0]);
    expect(s.manager.fetches).toBe(1);
  });

  it('refreshes 5 minutes before exp in the background (the old token still sent meanwhile), and waits for a new one once it is stale', async () => {
    const s = setup(3600);
    const first = await s.manager.get();
    s.advance(54 * 60 * 1000);
    expect(await s.manager.get()).toBe(first);
    expect(s.manager.fetches).toBe(1);
    s.advance(2 * 60 * 1000); // 56 min: inside the 5 min window
    expect(await s.manager.get()).toBe(first);
    await new Promise((r) => setImmediate(r));
    expect(s.manager.fetches).toBe(2);
    expect(await s.manager.get()).toBe(s.fetched[1]);
    s.advance(3600 * 1000); // the second is past its exp: get() waits for a third
    expect(await s.manager.get()).toBe(s.fetched[2]);
  });

  it('a short-lived token is refreshed at half its lifetime; one without exp lives 60 s', async () => {
    const s = setup(60);
    await s.manager.get();
    s.advance(29_000);
    await s.manager.get();
    expect(s.manager.fetches).toBe(1);
    s.advance(2_000);
    await s.manager.get();
    expect(s.manager.fetches).toBe(2);
    const n = setup(undefined);
    await n.manager.get();
    n.advance(61_000);
    await n.manager.get();
    expect(n.manager.fetches).toBe(2);
  });

  it('invalidate() forgets the refused token (a newer one is kept); a failed fetch is not cached and its error names no token', async () => {
    const s = setup(3600);
    const first = await s.manager.get();
    s.manager.invalidate('some-older-token');
    expect(await s.manager.get()).toBe(first);
    s.manager.invalidate(first);
    expect(await s.manager.get()).not.toBe(first);
    let fail = true;
    const failing = new AuthTokenManager(async () => {
      if (fail) throw new Error('UNAUTHENTICATED: bad token id');
      return jwt(Math.floor(Date.now() / 1000) + 3600);
    });
    await expect(failing.get()).rejects.toThrow('UNAUTHENTICATED: bad token id');
    fail = false;
    await expect(failing.get()).resolves.toMatch(/\./);
  });

  it('an aborted caller stops waiting without ending the fetch others share', async () => {
    const s = setup(3600);
    s.holdFetches(true);
    const abort = new AbortController();
    const aborted = s.manager.get(abort.signal);
    const other = s.manager.get();
    abort.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
    await new Promise((r) => setImmediate(r));
    s.release();
    const token = await other;
    expect(token).toBe(s.fetched[0]);
    expect(s.manager.fetches).toBe(1);
  });
});

// The short-lived token Modal's V2 RPCs require besides the token id and secret: a JWT from
// AuthTokenGet, sent as x-modal-auth-token. Modal's Python SDK (1.6.4, _utils/auth_token_manager.py)
// caches it, reads its lifetime from the JWT's `exp`, refreshes it ahead of time with one fetch in
// flight, and fetches a new one when the server refuses it. This does the same. The token is a
// credential: it is never logged and never put in an error's text.

/** The metadata key V2 calls carry the token in. */
export const AUTH_TOKEN_HEADER = 'x-modal-auth-token';

/** A token is refreshed this long before it expires (or at half its lifetime, if that is sooner). */
const REFRESH_BEFORE_MS = 5 * 60 * 1000;
/** A token whose `exp` cannot be read is used this long: Modal's are longer, so it only costs fetches. */
const UNKNOWN_LIFETIME_MS = 60 * 1000;
/** A token this close to its `exp` is not sent at all (clock skew, the call's own latency). */
const EXPIRY_MARGIN_MS = 10 * 1000;

interface Held {
  value: string;
  /** From here on, a new token is fetched in the background while this one is still sent. */
  refreshAtMs: number;
  /** From here on, this one is not sent: callers wait for a new one. */
  staleAtMs: number;
}

/** The `exp` of a JWT (epoch ms), or undefined when the token is not a JWT with one. Unverified: only the server can. */
export function jwtExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export class AuthTokenManager {
  readonly #fetch: (signal?: AbortSignal) => Promise<string>;
  readonly #now: () => number;
  #held: Held | undefined;
  /** The one fetch in flight, shared by every caller that needs a token meanwhile. */
  #inFlight: Promise<string> | undefined;
  /** How many times AuthTokenGet was asked (tests, diagnostics). */
  fetches = 0;

  /** `fetch` makes the AuthTokenGet call and returns the token (not empty). */
  constructor(fetch: (signal?: AbortSignal) => Promise<string>, now: () => number = Date.now) {
    this.#fetch = fetch;
    this.#now = now;
  }

  /** A token to send now: the cached one while it is fresh, else a new one (one fetch for all callers). */
  async get(signal?: AbortSignal): Promise<string> {
    const now = this.#now();
    const held = this.#held;
    if (held && now < held.staleAtMs) {
      // Past the refresh point: still good to send, and a new one is on its way for the next calls.
      if (now >= held.refreshAtMs) this.#refresh().catch(() => undefined);
      return held.value;
    }
    return this.#refresh(signal);
  }

  /**
   * The server refused `token` (UNAUTHENTICATED): forget it unless a newer one already replaced it,
   * so the next get() fetches. Callers retry once, not in a loop: a second refusal is the answer.
   */
  invalidate(token: string): void {
    if (this.#held?.value === token) this.#held = undefined;
  }

  #refresh(signal?: AbortSignal): Promise<string> {
    if (!this.#inFlight) {
      this.fetches++;
      // The fetch is shared, so one caller's abort must not end it for the others: it is not passed on.
      const fetching = this.#fetch().then((value) => {
        this.#held = this.#hold(value);
        return value;
      });
      this.#inFlight = fetching;
      const clear = () => {
        if (this.#inFlight === fetching) this.#inFlight = undefined;
      };
      fetching.then(clear, clear);
    }
    return signal ? abortable(this.#inFlight, signal) : this.#inFlight;
  }

  #hold(value: string): Held {
    const now = this.#now();
    const exp = jwtExpiryMs(value);
    const lifetime = exp !== undefined ? Math.max(0, exp - now) : UNKNOWN_LIFETIME_MS;
    const expAt = now + lifetime;
    return {
      value,
      refreshAtMs: expAt - Math.min(REFRESH_BEFORE_MS, lifetime / 2),
      staleAtMs: expAt - Math.min(EXPIRY_MARGIN_MS, lifetime / 4),
    };
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

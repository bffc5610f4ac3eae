// The short-lived JWTs AuthTokenGet hands out. Modal's V2 RPCs (SandboxCreateV2, SandboxWaitV2, ...)
// require one in x-modal-auth-token besides the token id and secret; clients cache it and fetch a
// new one at about half its lifetime, read from the JWT's `exp`.
import { randomBytes } from 'node:crypto';
import { Code, RpcError } from './grpc-server.js';
import { signJwt } from './jwt.js';

export const AUTH_TOKEN_HEADER = 'x-modal-auth-token';

export class AuthTokens {
  readonly #key = randomBytes(32);
  /** Every token issued and its expiry (epoch seconds); revoked ones are removed. */
  readonly #issued = new Map<string, number>();
  /** How many AuthTokenGet calls were answered. */
  issuedCount = 0;

  constructor(readonly ttlSecs: number) {}

  issue(): string {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.ttlSecs;
    const token = signJwt(this.#key, { iat: now, exp, jti: randomBytes(8).toString('hex') });
    this.#issued.set(token, exp);
    this.issuedCount++;
    return token;
  }

  /** UNAUTHENTICATED unless the header holds a token this simulator issued that has not expired. */
  check(header: string | string[] | undefined): void {
    const token = typeof header === 'string' ? header : '';
    if (!token) throw new RpcError(Code.UNAUTHENTICATED, `missing ${AUTH_TOKEN_HEADER} (a token from AuthTokenGet)`);
    const exp = this.#issued.get(token);
    if (exp === undefined) throw new RpcError(Code.UNAUTHENTICATED, `invalid ${AUTH_TOKEN_HEADER}`);
    if (exp <= Date.now() / 1000) throw new RpcError(Code.UNAUTHENTICATED, `${AUTH_TOKEN_HEADER} has expired`);
  }

  /** Every token issued so far is refused from now on (new ones work). */
  expireAll(): void {
    this.#issued.clear();
  }
}

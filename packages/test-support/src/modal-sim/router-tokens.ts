// The JWTs TaskGetCommandRouterAccess hands out: real three-part tokens with an `exp` claim (Modal's
// clients read it to refresh early), valid only for their task, and only as long as the simulator
// remembers issuing them.
import { randomBytes } from 'node:crypto';
import { Code, RpcError } from './grpc-server.js';
import { signJwt } from './jwt.js';

interface Issued {
  taskId: string;
  exp: number;
  revoked: boolean;
}

export class RouterTokens {
  readonly #key = randomBytes(32);
  readonly #issued = new Map<string, Issued>();

  constructor(readonly ttlSecs: number) {}

  issue(taskId: string): string {
    const exp = Math.floor(Date.now() / 1000) + this.ttlSecs;
    const jwt = signJwt(this.#key, { sub: taskId, task_id: taskId, exp, jti: randomBytes(8).toString('hex') });
    this.#issued.set(jwt, { taskId, exp, revoked: false });
    return jwt;
  }

  /** Throws UNAUTHENTICATED for a missing, unknown, expired or revoked token. */
  check(authorization: string | string[] | undefined, taskId: string): void {
    const m = /^Bearer\s+(\S+)$/i.exec(String(authorization ?? ''));
    if (!m) throw new RpcError(Code.UNAUTHENTICATED, 'missing authorization: Bearer <jwt> from TaskGetCommandRouterAccess');
    const token = this.#issued.get(m[1] as string);
    if (!token) throw new RpcError(Code.UNAUTHENTICATED, 'invalid JWT');
    if (token.revoked || token.exp <= Date.now() / 1000) throw new RpcError(Code.UNAUTHENTICATED, 'JWT has expired');
    if (token.taskId !== taskId) throw new RpcError(Code.PERMISSION_DENIED, `JWT is for task ${token.taskId}, not ${taskId}`);
  }

  /** Every token issued so far stops working (new ones do). */
  expireAll(): void {
    for (const token of this.#issued.values()) token.revoked = true;
  }
}

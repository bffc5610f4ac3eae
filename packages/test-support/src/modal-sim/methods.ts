// Building a service's method table. An RPC's messages are named explicitly when they are not
// <Name>Request / <Name>Response: Modal's V2 sandbox RPCs reuse the V1 messages
// (SandboxWaitV2 takes SandboxWaitRequest) and some answer google.protobuf.Empty.
import type { Msg } from './codec.js';
import { Code, RpcError, type CallContext, type Method } from './grpc-server.js';

export type Handler = (req: Msg, ctx: CallContext) => Promise<Msg> | Msg;
export type StreamHandler = (req: Msg, ctx: CallContext, send: (m: Msg) => Promise<void>) => Promise<void>;

export interface MethodOptions {
  /** Message names; full (`google.protobuf.Empty`) or relative to the service's package. */
  request?: string;
  response?: string;
  /** A retry with the same x-idempotency-key and request gets the first attempt's answer. */
  idempotent?: boolean;
  /** Runs before the handler (an extra check, e.g. the V2 auth token); throw an RpcError to refuse. */
  guard?: (ctx: CallContext) => void;
}

/** Answers a retry (same key, same request) with the first attempt's answer; failures are not kept. */
export class Idempotency {
  readonly #seen = new Map<string, { raw: string; answer: Promise<Msg> }>();

  run(ctx: CallContext, fn: () => Promise<Msg>): Promise<Msg> {
    if (!ctx.idempotencyKey) return fn();
    const key = `${ctx.path} ${ctx.idempotencyKey}`;
    const raw = Buffer.from(ctx.raw).toString('hex');
    const seen = this.#seen.get(key);
    if (seen) {
      if (seen.raw !== raw)
        return Promise.reject(new RpcError(Code.INVALID_ARGUMENT, `x-idempotency-key ${ctx.idempotencyKey} was used for a different request`));
      return seen.answer;
    }
    const answer = fn();
    this.#seen.set(key, { raw, answer });
    answer.catch(() => this.#seen.delete(key));
    return answer;
  }
}

export class MethodTable {
  readonly methods = new Map<string, Method>();
  readonly #idempotency = new Idempotency();

  /** `service` is the full service name, e.g. modal.client.ModalClient. */
  constructor(
    readonly service: string,
    readonly pkg: string,
  ) {}

  unary(name: string, fn: Handler, opts: MethodOptions = {}): void {
    const { guard, idempotent } = opts;
    this.methods.set(this.#path(name), {
      ...this.#names(name, opts),
      unary: (req, ctx) =>
        Promise.resolve().then(() => {
          guard?.(ctx);
          return idempotent ? this.#idempotency.run(ctx, async () => fn(req, ctx)) : fn(req, ctx);
        }),
    });
  }

  stream(name: string, fn: StreamHandler, opts: MethodOptions = {}): void {
    const { guard } = opts;
    this.methods.set(this.#path(name), {
      ...this.#names(name, opts),
      stream: async (req, ctx, send) => {
        guard?.(ctx);
        await fn(req, ctx, send);
      },
    });
  }

  #path(name: string): string {
    return `/${this.service}/${name}`;
  }

  #names(name: string, opts: MethodOptions): { request: string; response: string } {
    const full = (n: string) => (n.includes('.') ? n : `${this.pkg}.${n}`);
    return { request: full(opts.request ?? `${name}Request`), response: full(opts.response ?? `${name}Response`) };
  }
}

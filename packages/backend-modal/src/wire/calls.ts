// How berth calls Modal's RPCs: encode, send, decode, and retry unary calls the way Modal's own
// clients do (transient codes, backoff with jitter, RESOURCE_EXHAUSTED waited out with the
// server's hint, the same x-idempotency-key on every attempt of one logical call).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MessageName, MessageValue } from './schema.js';
import { decodeMessage, encodeMessage } from './protobuf.js';
import { GRPC_CODE, GrpcError } from './grpc-status.js';
import type { GrpcEndpoint, GrpcTransport } from './grpc.js';

/** Codes Modal's SDKs retry on unary calls. */
const TRANSIENT = new Set<number>([GRPC_CODE.DEADLINE_EXCEEDED, GRPC_CODE.UNAVAILABLE, GRPC_CODE.CANCELLED, GRPC_CODE.INTERNAL, GRPC_CODE.UNKNOWN]);

export interface RetryPolicy {
  /** Retries after the first try (the SDKs: 3). */
  retries: number;
  /** First wait; doubles up to maxDelayMs (the SDKs: 100 ms to 1 s). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** RESOURCE_EXHAUSTED is waited out this many times, for as long as the server says (capped). */
  rateLimitRetries: number;
  maxRateLimitWaitMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 100, maxDelayMs: 1000, rateLimitRetries: 8, maxRateLimitWaitMs: 30_000 };

export interface CallContext {
  endpoint: GrpcEndpoint;
  /** Auth and client metadata, asked for each attempt (a token may be refreshed between them). */
  metadata: () => Promise<Record<string, string>>;
  signal?: AbortSignal;
  /** For long-polls: no byte for this long ends the attempt. */
  idleTimeoutMs?: number;
}

/** Sends typed messages over a transport; `service` is the gRPC service's full name. */
export class RpcCaller {
  constructor(
    readonly transport: GrpcTransport,
    readonly service: string,
    readonly retry: RetryPolicy = DEFAULT_RETRY,
  ) {}

  /** A unary call, retried on transient codes with one idempotency key for all attempts. */
  async unary<Req extends MessageName, Res extends MessageName>(method: string, request: Req, value: MessageValue<Req>, response: Res, ctx: CallContext): Promise<MessageValue<Res>> {
    const body = encodeMessage(request, value);
    const key = randomUUID();
    let transient = 0;
    let limited = 0;
    for (;;) {
      try {
        const metadata = { ...(await ctx.metadata()), 'x-idempotency-key': key };
        const bytes = await this.transport.unary(ctx.endpoint, this.#options(method, metadata, ctx), body);
        return decodeMessage(response, bytes);
      } catch (error) {
        if (ctx.signal?.aborted || !GrpcError.isInstance(error)) throw error;
        let delay: number;
        if (error.code === GRPC_CODE.RESOURCE_EXHAUSTED) {
          if (++limited > this.retry.rateLimitRetries || (error.retryAfterMs ?? 0) > this.retry.maxRateLimitWaitMs) throw error;
          delay = error.retryAfterMs ?? jittered(this.retry.maxDelayMs);
        } else if (TRANSIENT.has(error.code)) {
          if (++transient > this.retry.retries) throw error;
          delay = jittered(Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (transient - 1)));
        } else {
          throw error;
        }
        const waited = await sleep(delay, true, ctx.signal ? { signal: ctx.signal } : {}).catch(() => false);
        if (!waited) throw error;
      }
    }
  }

  /** A server stream: never retried here (the caller knows where to resume). */
  async *stream<Req extends MessageName, Res extends MessageName>(method: string, request: Req, value: MessageValue<Req>, response: Res, ctx: CallContext): AsyncGenerator<MessageValue<Res>> {
    const metadata = await ctx.metadata();
    for await (const bytes of this.transport.stream(ctx.endpoint, this.#options(method, metadata, ctx), encodeMessage(request, value))) {
      yield decodeMessage(response, bytes);
    }
  }

  #options(method: string, metadata: Record<string, string>, ctx: CallContext) {
    return {
      path: `/${this.service}/${method}`,
      metadata,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(ctx.idleTimeoutMs !== undefined ? { idleTimeoutMs: ctx.idleTimeoutMs } : {}),
    };
  }
}

/** Up to half of the delay randomised away, so that clients failing together do not retry together. */
function jittered(ms: number): number {
  return Math.round(ms * (0.5 + Math.random() * 0.5));
}

// How berth calls Modal's RPCs: encode, send, decode, and retry unary calls the way Modal's own
// clients do (transient codes, backoff with jitter, RESOURCE_EXHAUSTED waited out with the
// server's hint, the same x-idempotency-key on every attempt of one logical call), on the kit's
// retry helper.
import { randomUUID } from 'node:crypto';
import { retryIdempotent, type ApiRetryPolicy, type TransientAnswer } from '@berth/core/backend-kit';
import type { MessageName, MessageValue } from './schema.js';
import { decodeMessage, encodeMessage } from './protobuf.js';
import { GRPC_CODE, GrpcError } from './grpc-status.js';
import type { GrpcEndpoint, GrpcTransport } from './grpc.js';

/**
 * Codes Modal's SDKs retry on unary calls. DEADLINE_EXCEEDED, CANCELLED and INTERNAL may mean the
 * server did the work: a retry is safe only because every attempt of a call carries its one
 * x-idempotency-key, which the server deduplicates by (and the router's exec calls are keyed by
 * exec id and offset).
 */
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
  /**
   * RESOURCE_EXHAUSTED: waited out here ('retry', the default), or thrown at once for the caller,
   * which has more to do than wait (a sandbox's create tells the creation limiter, then waits).
   */
  rateLimits?: 'retry' | 'caller';
}

/** Sends typed messages over a transport; `service` is the gRPC service's full name. */
export class RpcCaller {
  /** The retry policy in the kit's terms: transient codes, and rate limits counted apart. */
  readonly #policies: { transient: ApiRetryPolicy; rateLimited: ApiRetryPolicy };

  /** gRPC's retryable codes; RESOURCE_EXHAUSTED with the server's hint, on its own count, unless the caller takes it. */
  #retryable(ctx: CallContext): TransientAnswer {
    return (error) => {
      if (!GrpcError.isInstance(error)) return undefined;
      if (error.code === GRPC_CODE.RESOURCE_EXHAUSTED) {
        if (ctx.rateLimits === 'caller') return undefined;
        return { policy: this.#policies.rateLimited, ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}) };
      }
      return TRANSIENT.has(error.code) ? {} : undefined;
    };
  }

  constructor(
    readonly transport: GrpcTransport,
    readonly service: string,
    readonly retry: RetryPolicy = DEFAULT_RETRY,
  ) {
    this.#policies = kitPolicies(retry);
  }

  /** A unary call, retried on transient codes with one idempotency key for all attempts. */
  async unary<Req extends MessageName, Res extends MessageName>(
    method: string,
    request: Req,
    value: MessageValue<Req>,
    response: Res,
    ctx: CallContext,
  ): Promise<MessageValue<Res>> {
    const body = encodeMessage(request, value);
    const key = randomUUID();
    const send = async () => this.transport.unary(ctx.endpoint, this.#options(method, { ...(await ctx.metadata()), 'x-idempotency-key': key }, ctx), body);
    const bytes = await retryIdempotent(send, this.#retryable(ctx), { policy: this.#policies.transient, ...(ctx.signal ? { signal: ctx.signal } : {}) });
    return decodeMessage(response, bytes);
  }

  /** A server stream: never retried here (the caller knows where to resume). */
  async *stream<Req extends MessageName, Res extends MessageName>(
    method: string,
    request: Req,
    value: MessageValue<Req>,
    response: Res,
    ctx: CallContext,
  ): AsyncGenerator<MessageValue<Res>> {
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

/**
 * Modal's policy as the kit's: `retries` transient retries from baseDelayMs, doubling to
 * maxDelayMs; a rate limit without a hint waits about maxDelayMs (jittered), with one as long as
 * the hint, up to maxRateLimitWaitMs (a longer one is thrown for the caller to wait out).
 */
function kitPolicies(retry: RetryPolicy): { transient: ApiRetryPolicy; rateLimited: ApiRetryPolicy } {
  return {
    transient: { attempts: retry.retries + 1, initialMs: retry.baseDelayMs, maxMs: retry.maxDelayMs, maxRetryAfterMs: retry.maxRateLimitWaitMs },
    rateLimited: { attempts: retry.rateLimitRetries + 1, initialMs: retry.maxDelayMs, maxMs: retry.maxDelayMs, maxRetryAfterMs: retry.maxRateLimitWaitMs },
  };
}

// gRPC status codes, and the error a call ends with when its status is not OK.

export const GRPC_CODE = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcCodeName = keyof typeof GRPC_CODE;

const NAMES = new Map<number, GrpcCodeName>(Object.entries(GRPC_CODE).map(([name, code]) => [code, name as GrpcCodeName]));

const BRAND = Symbol.for('berth.modal.GrpcError');

/** A call that ended with a non-OK status, or never got one (the connection failed). */
export class GrpcError extends Error {
  readonly [BRAND] = true;
  readonly code: number;
  /** The server's hint (grpc-status-details-bin), for RESOURCE_EXHAUSTED and the like. */
  readonly retryAfterMs: number | undefined;
  /** Set when no status arrived: the connection or stream failed on the way (never reached the server, or cut). */
  readonly transport: boolean;

  constructor(code: number, message: string, retryAfterMs?: number, opts: { transport?: boolean; cause?: unknown } = {}) {
    super(`${NAMES.get(code) ?? `code ${code}`}: ${message}`, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.name = 'GrpcError';
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    this.transport = opts.transport ?? false;
  }

  get codeName(): GrpcCodeName | undefined {
    return NAMES.get(this.code);
  }

  /** The server's own words, without the code prefix. */
  get details(): string {
    return this.message.replace(/^[A-Z_]+: |^code \d+: /, '');
  }

  static isInstance(value: unknown): value is GrpcError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** A failure below gRPC (refused, reset, GOAWAY, RST_STREAM): UNAVAILABLE, as gRPC clients report it. */
  static fromTransport(error: unknown, path: string): GrpcError {
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown } | undefined)?.code;
    return new GrpcError(GRPC_CODE.UNAVAILABLE, `${path}: ${typeof code === 'string' ? `${code}: ` : ''}${message}`, undefined, {
      transport: true,
      cause: error,
    });
  }
}

/** The gRPC code for an HTTP status when a proxy answered instead of the server (gRPC's own table). */
export function grpcCodeOfHttp(status: number): number {
  switch (status) {
    case 400:
      return GRPC_CODE.INTERNAL;
    case 401:
      return GRPC_CODE.UNAUTHENTICATED;
    case 403:
      return GRPC_CODE.PERMISSION_DENIED;
    case 404:
      return GRPC_CODE.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GRPC_CODE.UNAVAILABLE;
    default:
      return GRPC_CODE.UNKNOWN;
  }
}

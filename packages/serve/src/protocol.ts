// The wire between a client (harbor's plugin, in Python) and `berth serve --stdio`: JSON-RPC 2.0,
// one message a line on stdin and stdout. Versioned by PROTOCOL_VERSION: a client says which it
// speaks in `initialize`, and a server that speaks another refuses it there, before anything runs.
import type {
  Capabilities,
  ClassifiedFailure,
  EnvironmentSpecInput,
  NetworkMode,
  PreflightReport,
  SerializedError,
  TeardownResult,
  TransferStats,
} from '@berth/core';

/** Bumped on any change a client of the previous version would misread. */
export const PROTOCOL_VERSION = 1;

export type RequestId = number | string;

export interface RpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: unknown;
}

export interface RpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
}

export interface RpcError {
  code: number;
  message: string;
  data?: BerthErrorData;
}

export type RpcResponse = { jsonrpc: '2.0'; id: RequestId | null; result: unknown } | { jsonrpc: '2.0'; id: RequestId | null; error: RpcError };

/** JSON-RPC's own codes, and berth's one: the call reached berth and berth's error says why it failed. */
export const ERROR_CODES = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  berth: -32000,
} as const;

/** Every error carries berth's whole error (cause chain, secrets redacted) and its classification. */
export interface BerthErrorData {
  error: SerializedError;
  classification: ClassifiedFailure;
}

/** The methods, each with its params and result. */
export interface Methods {
  /** First call, once: which backend, with which options; `pool`: keep that many idle sandboxes per spec, each made ready by `prepare`. */
  initialize: {
    params: {
      protocol: number;
      client?: string;
      backend: string;
      options?: Record<string, unknown>;
      buildRepository?: string;
      pool?: number;
      /** With `pool`: argv run as root in each pooled sandbox before it waits for a claim (PoolOptions.prepare). */
      prepare?: string[];
    };
    result: { protocol: number; berth: string; backend: string; target: string; capabilities: Capabilities };
  };
  preflight: { params: { spec?: EnvironmentSpecInput }; result: PreflightReport };
  /** Starts a sandbox (claims one from the pool, with `pool`); `startMs` is how long that took here. */
  start: {
    params: {
      spec: EnvironmentSpecInput;
      /**
       * A harbor task's environment/docker-compose.yaml, read as harbor runs it (@berth/harbor's
       * readCompose): its services join the spec (spec.services, spec.dependsOn, main's environment
       * under spec.env). `taskEnv`: the task's [environment.env], resolved; interpolation reads this
       * process's environment under it.
       */
      compose?: { file: string; contextDir: string; mainImageName?: string; taskEnv?: Record<string, string>; cpus?: number; memoryMb?: number };
    };
    result: { id: string; startMs: number };
  };
  /**
   * Runs argv (exactly, no shell) in the sandbox. With `stream`, output also arrives as
   * `output` notifications while it runs. A timeout is data (`timedOut`), not an error.
   */
  exec: {
    params: { id: string; argv: string[]; cwd?: string; env?: Record<string, string>; user?: string; timeoutMs?: number; stdin?: string; stream?: boolean };
    result: {
      exitCode: number;
      stdout: string;
      stderr: string;
      timedOut: boolean;
      signal?: string;
      truncated: { stdout: boolean; stderr: boolean };
      durationMs: number;
    };
  };
  /** Transfers between this machine's files (paths the server process can read and write) and the sandbox. */
  uploadFile: { params: { id: string; from: string; to: string }; result: Record<string, never> };
  uploadDir: { params: { id: string; from: string; to: string }; result: TransferStats };
  downloadFile: { params: { id: string; from: string; to: string }; result: Record<string, never> };
  downloadDir: { params: { id: string; from: string; to: string }; result: TransferStats };
  setNetwork: { params: { id: string; mode: NetworkMode }; result: Record<string, never> };
  teardown: { params: { id: string }; result: TeardownResult };
  /** Tears down every sandbox this process made, then answers; the process exits after it. */
  shutdown: { params: Record<string, never>; result: { tornDown: number } };
}

export type MethodName = keyof Methods;

/** Notifications. Client to server: `$/cancel` aborts a call (an exec's whole process tree is killed). */
export interface CancelParams {
  id: RequestId;
}

/** Server to client: output of a streaming exec, in order per stream, tagged with the exec's request id. */
export interface OutputParams {
  call: RequestId;
  stream: 'stdout' | 'stderr';
  data: string;
}

// What one `berth serve` process holds: the backend `initialize` named (pooled, with `pool`) and
// every sandbox it started, by id. Each method is the library call it names; the server around
// it (server.ts) owns the wire, cancellation and errors.
import { readFile } from 'node:fs/promises';
import { ConfigError, NetworkSchema, pooled, type Backend, type Environment, type EnvironmentSpecInput, type NetworkMode } from '@berth/core';
import { readCompose } from '@berth/harbor';
import { checkParams } from './params.js';
import { PROTOCOL_VERSION, type Methods, type OutputParams, type RequestId } from './protocol.js';

type Params<M extends keyof Methods> = Methods[M]['params'];
type Result<M extends keyof Methods> = Methods[M]['result'];

/** What a method gets besides its params: the abort of its call, and a way to send notifications. */
export interface CallContext {
  id: RequestId;
  signal: AbortSignal;
  notify(method: 'output', params: OutputParams): void;
}

export interface SessionOptions {
  /** Makes the backend `initialize` names (the CLI loads the backend's package). */
  createBackend(params: Params<'initialize'>): Promise<Backend>;
  /** berth's version, said in `initialize`. */
  version: string;
}

export class Session {
  readonly #options: SessionOptions;
  #backend: Backend | undefined;
  #closePool: (() => Promise<void>) | undefined;
  readonly #envs = new Map<string, Environment>();

  constructor(options: SessionOptions) {
    this.#options = options;
  }

  async initialize(raw: unknown): Promise<Result<'initialize'>> {
    const params = checkParams<Params<'initialize'>>(
      'initialize',
      raw,
      { protocol: 'number', backend: 'string' },
      { client: 'string', options: 'object', buildRepository: 'string', pool: 'number', prepare: 'string[]' },
    );
    if (params.protocol !== PROTOCOL_VERSION)
      throw new ConfigError({
        operation: 'config',
        path: 'params.protocol',
        message: `this berth speaks protocol ${PROTOCOL_VERSION}, the client ${params.protocol}: install the berth and harbor-berth versions released together`,
      });
    if (this.#backend)
      throw new ConfigError({
        operation: 'config',
        path: 'initialize',
        message: 'initialize was already called: start another berth process for other options',
      });
    if (params.pool !== undefined && (!Number.isInteger(params.pool) || params.pool < 0))
      throw new ConfigError({
        operation: 'config',
        path: 'params.pool',
        message: `pool is how many idle sandboxes to keep per spec, a whole number >= 0; got ${params.pool}`,
      });
    const backend = await this.#options.createBackend(params);
    if (params.prepare && !params.pool)
      throw new ConfigError({ operation: 'config', path: 'params.prepare', message: 'prepare readies pooled sandboxes: give pool too' });
    if (params.pool) {
      const warm = pooled(backend, { size: params.pool, ...(params.prepare ? { prepare: prepareWith(params.prepare) } : {}) });
      this.#closePool = () => warm.close();
      this.#backend = warm;
    } else this.#backend = backend;
    return { protocol: PROTOCOL_VERSION, berth: this.#options.version, backend: backend.name, target: backend.target, capabilities: backend.capabilities };
  }

  get #ready(): Backend {
    if (!this.#backend)
      throw new ConfigError({ operation: 'config', path: 'initialize', message: 'call initialize first: it names the backend and its options' });
    return this.#backend;
  }

  #env(id: string): Environment {
    const env = this.#envs.get(id);
    if (!env)
      throw new ConfigError({
        operation: 'config',
        path: 'params.id',
        message: `no sandbox ${id} in this berth process (torn down already, or started by another)`,
      });
    return env;
  }

  preflight(raw: unknown): Promise<Result<'preflight'>> {
    const params = checkParams<Params<'preflight'>>('preflight', raw, {}, { spec: 'object' });
    return this.#ready.preflight(params.spec);
  }

  async start(raw: unknown, call: CallContext): Promise<Result<'start'>> {
    const params = checkParams<Params<'start'>>('start', raw, { spec: 'object' }, { compose: 'object' });
    const began = performance.now();
    const spec = params.compose ? await withCompose(params.spec, params.compose) : params.spec;
    const env = await this.#ready.start(spec, { signal: call.signal });
    this.#envs.set(env.id, env);
    return { id: env.id, startMs: Math.round((performance.now() - began) * 10) / 10 };
  }

  async exec(raw: unknown, call: CallContext): Promise<Result<'exec'>> {
    const p = checkParams<Params<'exec'>>(
      'exec',
      raw,
      { id: 'string', argv: 'string[]' },
      { cwd: 'string', env: 'record', user: 'string', timeoutMs: 'number', stdin: 'string', stream: 'boolean' },
    );
    const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const forward = (stream: 'stdout' | 'stderr') => (chunk: Uint8Array) => {
      const data = decoders[stream].decode(chunk, { stream: true });
      if (data.length > 0) call.notify('output', { call: call.id, stream, data });
    };
    const result = await this.#env(p.id).exec(p.argv, {
      signal: call.signal,
      ...(p.cwd !== undefined ? { cwd: p.cwd } : {}),
      ...(p.env !== undefined ? { env: p.env } : {}),
      ...(p.user !== undefined ? { user: p.user } : {}),
      ...(p.timeoutMs !== undefined ? { timeoutMs: p.timeoutMs } : {}),
      ...(p.stdin !== undefined ? { stdin: p.stdin } : {}),
      ...(p.stream ? { onStdout: forward('stdout'), onStderr: forward('stderr') } : {}),
    });
    return {
      exitCode: result.exitCode,
      stdout: result.stdout,
      stderr: result.stderr,
      timedOut: result.timedOut,
      ...(result.signal !== undefined ? { signal: result.signal } : {}),
      truncated: result.truncated,
      durationMs: result.durationMs,
    };
  }

  async transfer(method: 'uploadFile' | 'uploadDir' | 'downloadFile' | 'downloadDir', raw: unknown, call: CallContext): Promise<unknown> {
    const p = checkParams<{ id: string; from: string; to: string }>(method, raw, { id: 'string', from: 'string', to: 'string' });
    const env = this.#env(p.id);
    const opts = { signal: call.signal };
    switch (method) {
      case 'uploadFile':
        await env.uploadFile(p.from, p.to, opts);
        return {};
      case 'downloadFile':
        await env.downloadFile(p.from, p.to, opts);
        return {};
      case 'uploadDir':
        return env.uploadDir(p.from, p.to, opts);
      case 'downloadDir':
        return env.downloadDir(p.from, p.to, opts);
    }
  }

  async setNetwork(raw: unknown): Promise<Result<'setNetwork'>> {
    const p = checkParams<{ id: string; mode: NetworkMode }>('setNetwork', raw, { id: 'string', mode: 'network' });
    const parsed = NetworkSchema.safeParse(p.mode);
    if (!parsed.success)
      throw new ConfigError({
        operation: 'config',
        path: 'params.mode',
        message: `setNetwork: mode is 'public', 'none' or { allow: [...] } (hostnames, *.domain, IPv4 addresses and ranges), got ${JSON.stringify(p.mode)?.slice(0, 120)}`,
      });
    await this.#env(p.id).setNetwork(parsed.data);
    return {};
  }

  /** Idempotent: a sandbox already torn down (or never known here) is `{ removed: false }`, not an error. */
  async teardown(raw: unknown): Promise<Result<'teardown'>> {
    const p = checkParams<{ id: string }>('teardown', raw, { id: 'string' });
    const env = this.#envs.get(p.id);
    if (!env) return { removed: false };
    try {
      return await env.teardown();
    } finally {
      this.#envs.delete(p.id);
    }
  }

  /** Every sandbox torn down (at once, errors swallowed: there is no one left to tell), then the pool closed. */
  async close(): Promise<Result<'shutdown'>> {
    const envs = [...this.#envs.values()];
    this.#envs.clear();
    await Promise.allSettled(envs.map((env) => env.teardown()));
    await this.#closePool?.().catch(() => undefined);
    return { tornDown: envs.length };
  }
}

/** PoolOptions.prepare from an argv: run as root; a non-zero exit fails that sandbox's start, saying why. */
function prepareWith(argv: string[]): (env: Environment) => Promise<void> {
  return async (env) => {
    const result = await env.exec(argv, { user: 'root' });
    if (result.exitCode !== 0)
      throw new ConfigError({
        operation: 'start',
        path: 'params.prepare',
        message: `the pool's prepare command (${argv.join(' ')}) exited ${result.exitCode}: ${(result.stderr || result.stdout).trim().slice(0, 500)}`,
      });
  };
}

/** A spec with a harbor compose file's services (see the start params' `compose`); a ConfigError names the compose key that is wrong. */
async function withCompose(spec: EnvironmentSpecInput, compose: NonNullable<Params<'start'>['compose']>): Promise<EnvironmentSpecInput> {
  const text = await readFile(compose.file, 'utf8').catch((error: unknown) => {
    throw new ConfigError({
      operation: 'config',
      path: 'params.compose.file',
      message: `start: params.compose.file ${compose.file} cannot be read: ${(error as Error).message}`,
      cause: error,
    });
  });
  const read = readCompose(
    compose.file,
    text,
    {
      contextDir: compose.contextDir,
      mainImageName: compose.mainImageName ?? 'hb__main',
      ...(compose.cpus !== undefined ? { cpus: compose.cpus } : {}),
      ...(compose.memoryMb !== undefined ? { memoryMb: compose.memoryMb } : {}),
    },
    process.env,
    compose.taskEnv ?? {},
  );
  return {
    ...spec,
    env: { ...read.mainEnv, ...(spec.env ?? {}) },
    ...(Object.keys(read.services).length ? { services: read.services } : {}),
    ...(Object.keys(read.mainDependsOn).length ? { dependsOn: read.mainDependsOn } : {}),
    ...(read.mainMounts.length ? { mounts: [...(spec.mounts ?? []), ...read.mainMounts] } : {}),
  };
}

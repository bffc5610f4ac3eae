import { setTimeout as sleep } from 'node:timers/promises';
import { BerthError, ImageBuildError, ImagePullError, ServiceStartError } from '../errors.js';
import { oneShots, type Service, type ServiceCondition, type ServiceHealthcheck } from '../services.js';

/** How a service is now, as its engine tells it. */
export type ServiceState = { running: true } | { running: false; exitCode: number | null; oomKilled?: boolean; reason: string };

/** What a backend gives the kit to start a sandbox's services (spec.services); the order, the waiting and the errors are the kit's. */
export interface ServiceEngine {
  /** Make and start the service's container (its image pulled with the sandbox's credentials, or built). Resolves once it runs. */
  start(name: string, signal: AbortSignal): Promise<void>;
  /** Run `argv` once in the service's container: its exit code (null: none came) and output. */
  probe(name: string, argv: readonly string[], timeoutMs: number, signal: AbortSignal): Promise<{ code: number | null; output: string; timedOut: boolean }>;
  state(name: string): Promise<ServiceState>;
  /** The service's last log lines, for the error that names it. */
  logs(name: string): Promise<string>;
}

export interface ServiceGroupContext {
  backend: string;
  environmentId: string;
  signal: AbortSignal;
  status(text: string): void;
}

/** How often a one-shot's end, or a healthcheck-less service's run, is looked at. */
const POLL_MS = 250;
const LOG_LINES = 20;

/**
 * Starts `services` as `docker compose up --wait` would: each after what it depends on reached
 * the condition asked (started; healthy; completed, exit 0), those that depend on nothing at once;
 * resolves when every one is up (running; healthy where it has a healthcheck; exited 0 where
 * others wait for it to complete). The first failure rejects, naming the service, with its last
 * log lines; the rest are stopped waiting for (teardown removes them all).
 */
export async function startServices(
  services: Readonly<Record<string, Service>>,
  engine: ServiceEngine,
  ctx: ServiceGroupContext,
  /** spec.dependsOn: what the sandbox waits for (its 'completed' ones are one-shots too). */
  sandboxDependsOn: Readonly<Record<string, ServiceCondition>> = {},
): Promise<void> {
  const names = Object.keys(services);
  if (names.length === 0) return;
  const abort = new AbortController();
  const onAbort = () => abort.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  const completes = oneShots(services, sandboxDependsOn);
  const started = new Map<string, Promise<void>>();
  const up = new Map<string, Promise<void>>();
  const fail = (name: string, reason: ServiceStartError['reason'], message: string, logTail: string, timedOut = false) =>
    new ServiceStartError({ backend: ctx.backend, environmentId: ctx.environmentId, service: name, reason, timedOut, logTail, message });
  const logs = (name: string) =>
    engine.logs(name).then(
      (text) => lastLines(text),
      () => '',
    );

  const reached = (name: string, condition: ServiceCondition): Promise<void> => (condition === 'started' ? started.get(name)! : up.get(name)!);
  // Every service's start and its "up" are made before any awaits, so each can wait for the others'.
  for (const name of names) {
    const service = services[name]!;
    const start = (async () => {
      await Promise.all(Object.entries(service.dependsOn).map(([dep, condition]) => reached(dep, condition)));
      abort.signal.throwIfAborted();
      ctx.status(`starting service ${name}`);
      await engine.start(name, abort.signal).catch((error: unknown) => {
        throw namedImageError(name, error, ctx);
      });
    })();
    started.set(name, start);
    up.set(
      name,
      start.then(async () => {
        if (completes.has(name)) return awaitCompletion(name);
        if (service.healthcheck) return awaitHealthy(name, service.healthcheck);
      }),
    );
  }

  async function awaitCompletion(name: string): Promise<void> {
    ctx.status(`waiting for service ${name} to complete`);
    for (;;) {
      const state = await engine.state(name);
      if (!state.running) {
        if (state.exitCode === 0) return;
        const tail = await logs(name);
        const message = `service ${name} did not complete (${state.reason}); the services waiting for it could not start. Its last log lines: ${tail}`;
        throw fail(name, state.oomKilled ? 'oom' : 'exited', message, tail);
      }
      await sleep(POLL_MS, undefined, { signal: abort.signal });
    }
  }

  async function awaitHealthy(name: string, check: ServiceHealthcheck): Promise<void> {
    ctx.status(`waiting for service ${name} to be healthy`);
    const since = Date.now();
    let failures = 0;
    for (;;) {
      let result;
      try {
        result = await engine.probe(name, check.command, check.timeoutMs, abort.signal);
      } catch (error) {
        // An engine refuses to run a probe in a container that has ended: that end is the news.
        const state = await engine.state(name).catch(() => undefined);
        if (state && !state.running) throw await ended(name, state);
        throw error;
      }
      if (result.code === 0 && !result.timedOut) return;
      const state = await engine.state(name);
      if (!state.running) throw await ended(name, state);
      const last = result.timedOut ? `timed out after ${check.timeoutMs} ms` : `exit ${result.code}: ${result.output.trim().slice(-200)}`;
      const inStartPeriod = Date.now() - since < check.startPeriodMs;
      if (!inStartPeriod && ++failures >= check.retries) {
        const tail = await logs(name);
        throw fail(
          name,
          'unhealthy',
          `service ${name} did not become healthy: its healthcheck (${check.command.join(' ')}) failed ${failures} time(s) in a row, the last ${last}. Its last log lines: ${tail}`,
          tail,
          result.timedOut,
        );
      }
      await sleep(inStartPeriod ? check.startIntervalMs : check.intervalMs, undefined, { signal: abort.signal });
    }
  }

  async function ended(name: string, state: Extract<ServiceState, { running: false }>): Promise<ServiceStartError> {
    const tail = await logs(name);
    return fail(name, state.oomKilled ? 'oom' : 'exited', `service ${name} ended before it was up (${state.reason}). Its last log lines: ${tail}`, tail);
  }

  try {
    // The first failure wins; the others' loops stop with the abort.
    await Promise.all(
      names.map((name) =>
        up.get(name)!.catch(async (error: unknown) => {
          if (!abort.signal.aborted) abort.abort(error);
          throw error;
        }),
      ),
    );
  } catch (error) {
    const first = abort.signal.reason;
    throw BerthError.isInstance(first) || first instanceof Error ? first : error;
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
  }
}

/** A service's image that could not be pulled or built: the same error, saying whose image it was. */
function namedImageError(name: string, error: unknown, ctx: ServiceGroupContext): unknown {
  const at = { backend: ctx.backend, environmentId: ctx.environmentId, cause: error };
  if (ImagePullError.isInstance(error))
    return new ImagePullError({ ...at, operation: 'pull', reason: error.reason, image: error.image, message: `service ${name}: ${error.message}` });
  if (ImageBuildError.isInstance(error))
    return new ImageBuildError({
      ...at,
      operation: 'build',
      reason: error.reason,
      context: error.context,
      ...(error.step !== undefined ? { step: error.step } : {}),
      logTail: error.logTail,
      message: `service ${name}: ${error.message}`,
    });
  return error;
}

/** The last `lines` lines of a log. */
export function lastLines(text: string, lines = LOG_LINES): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

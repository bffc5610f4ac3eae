// API-level faults, made by a loopback proxy between the backend and the real API server:
// 429 then success, 5xx, 403, dropped and expired watches, exec sockets cut mid-command.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BackendAuthError, BackendUnavailableError, classifyFailure, type Environment } from '@berth/core';
import { API_RETRY_DEFAULTS } from '@berth/core/backend-kit';
import { createK8sBackend } from '@berth/backend-k8s';
import { ApiProxy } from './support/api-proxy.js';
import { NAMESPACE, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

const SPEC = { image: 'berth-test/busybox:latest', network: 'public' as const };
let proxy: ApiProxy;
const envs: Environment[] = [];

beforeAll(async () => {
  proxy = await ApiProxy.start();
});
afterEach(async () => {
  proxy.clearFaults();
  await Promise.all(envs.splice(0).map((e) => e.teardown()));
});
afterAll(() => proxy.close());

const backend = () => createK8sBackend({ kubeconfig: proxy.kubeconfig(), tolerations: TOLERATE_FAULT });

async function started(): Promise<Environment> {
  const env = backend().environment(SPEC);
  envs.push(env);
  await env.start();
  return env;
}

function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
}

const podsPath = new RegExp(`/namespaces/${NAMESPACE}/pods$`);
const count = (method: string, path: RegExp) => proxy.seen.filter((r) => r.method === method && path.test(r.path)).length;

describe('k8s API faults through a loopback proxy', () => {
  it('429 with Retry-After, then success: the pod is created once and the start succeeds', async () => {
    const before = count('POST', podsPath);
    const rule = proxy.fail({ method: 'POST', path: podsPath, status: 429, headers: { 'retry-after': '1' }, times: 1 });
    const t0 = Date.now();
    const env = await started();
    expect(rule.hits).toBe(1);
    expect(count('POST', podsPath) - before).toBe(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    await expect(env.exec('echo ok')).resolves.toMatchObject({ exitCode: 0, stdout: 'ok\n' });
  });

  it('500s on reads are retried; a 500 that persists is a transient BackendUnavailableError', async () => {
    const env = await started();
    // The pod read whose answer the caller sees: after a command exits non-zero, the kit asks the
    // pod (inspect) whether it is still the one started. A read that failed would fail the exec.
    const reads = new RegExp(`/pods/${env.id}$`);
    const answered = () => proxy.seen.filter((r) => r.method === 'GET' && reads.test(r.path) && !r.faulted).length;
    const before = answered();
    const twice = proxy.fail({ method: 'GET', path: reads, status: 500, times: 2 });
    await expect(env.exec('exit 3')).resolves.toMatchObject({ exitCode: 3 });
    expect(twice.hits).toBe(2);
    expect(answered() - before).toBe(1);

    // Every try answered 500: the exec's outcome cannot be known, and says so as a transient error.
    const always = proxy.fail({ method: 'GET', path: reads, status: 500 });
    const persisted = await failure(env.exec('exit 3'));
    expect(BackendUnavailableError.isInstance(persisted), String(persisted)).toBe(true);
    expect(classifyFailure(persisted)).toMatchObject({ category: 'transient_infra', retryable: true });
    expect(always.hits).toBe(API_RETRY_DEFAULTS.attempts);
    proxy.clearFaults();

    proxy.fail({ method: 'POST', path: podsPath, status: 503 });
    const error = await failure(backend().start(SPEC));
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra', retryable: true });
  });

  it('403: BackendAuthError (permanent), asked once, never retried', async () => {
    const before = count('POST', podsPath);
    proxy.fail({ method: 'POST', path: podsPath, status: 403 });
    const error = await failure(backend().start(SPEC));
    expect(BackendAuthError.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error)).toMatchObject({ category: 'permanent_infra', retryable: false });
    expect((error as Error).message).toMatch(/refused berth's credentials \(403\).*Role/);
    expect(count('POST', podsPath) - before).toBe(1);

    proxy.clearFaults();
    const env = await started();
    proxy.fail({ path: /\/exec\?/, status: 403 });
    const refused = await failure(env.exec('true'));
    expect(BackendAuthError.isInstance(refused), String(refused)).toBe(true);
  });

  it('a watch that drops, and one that expires (410 Gone), are resumed without the caller noticing', async () => {
    const watches = /[?&]watch=true/;
    // The first watch of the start expires at once; every open watch is dropped every 100 ms.
    const expired = proxy.fail({
      method: 'GET',
      path: watches,
      status: 200,
      times: 1,
      body: `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 } })}\n`,
    });
    const dropping = setInterval(() => proxy.dropWatches(), 100);
    const before = count('GET', watches);
    try {
      const env = await started();
      expect(expired.hits).toBe(1);
      expect(count('GET', watches) - before).toBeGreaterThanOrEqual(2);
      await expect(env.exec('echo alive')).resolves.toMatchObject({ exitCode: 0 });
    } finally {
      clearInterval(dropping);
    }
  });

  it('an exec socket cut mid-command while the pod lives: BackendUnavailableError, never an exit code; the sandbox stays usable', async () => {
    const env = await started();
    const running = env.exec('echo started; sleep 30');
    const deadline = Date.now() + 10_000;
    while (proxy.openExecs === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    expect(proxy.cutExecs()).toBeGreaterThan(0);
    const error = await failure(running);
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect(classifyFailure(error)).toMatchObject({ category: 'transient_infra', type: 'BackendUnavailableError' });
    expect(Date.now() - t0).toBeLessThan(10_000);
    await expect(env.exec('echo still here')).resolves.toMatchObject({ exitCode: 0, stdout: 'still here\n' });
  });

  it('a command silent for longer than an idle timeout on the way is kept alive by pings', async () => {
    const env = createK8sBackend({ kubeconfig: proxy.kubeconfig(), tolerations: TOLERATE_FAULT, execKeepAliveMs: 300 }).environment(SPEC);
    envs.push(env);
    await env.start();
    proxy.execIdleCutMs = 1200;
    await expect(env.exec('sleep 4; echo done')).resolves.toMatchObject({ exitCode: 0, stdout: 'done\n' });
    // The same silence without pings is cut: the proxy's idle timeout is real.
    const quiet = createK8sBackend({ kubeconfig: proxy.kubeconfig(), tolerations: TOLERATE_FAULT, execKeepAliveMs: 60_000 }).environment(SPEC);
    envs.push(quiet);
    await quiet.start();
    const error = await failure(quiet.exec('sleep 4; echo done'));
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
  });

  it('a slow API (300 ms a call) still starts, runs and tears down', async () => {
    proxy.delayMs = 300;
    const env = await started();
    await expect(env.exec('echo slow')).resolves.toMatchObject({ exitCode: 0 });
  });
});

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertSupported, pullFailure } from '../src/kit/index.js';
import { ConfigError, REMEDY_IDS, RunMismatchError, parseEnvironmentSpec, remedied, runTrials, serializeError, type Capabilities } from '../src/index.js';

// An error that names what fixes it carries that as a remedy: a stable id, and the words of its
// message that say it (so another program can say them its own way), set where the message is built.

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const CAPABILITIES: Capabilities = {
  gpus: false,
  gpuTypes: false,
  networkModes: ['public'],
  networkSwitch: false,
  networkAllowlist: false,
  imageAuth: ['basic'],
  mounts: [],
  imageBuild: false,
  execUser: true,
  tty: false,
  snapshot: false,
  services: false,
  resourceLimits: { cpus: true, memory: true, storage: false },
};

describe('remedies', () => {
  it("remedied: the message is composed around the remedy's words, so it always contains them", () => {
    const made = remedied('kubeconfig', 'pass options.kubeconfig', (fix) => `no kubeconfig: ${fix}`);
    expect(made).toEqual({ message: 'no kubeconfig: pass options.kubeconfig', remedy: { id: 'kubeconfig', says: 'pass options.kubeconfig' } });
    expect(new ConfigError(made).remedy).toEqual(made.remedy);
    expect(`hint: ${made}`).toBe('hint: no kubeconfig: pass options.kubeconfig');
    expect(new ConfigError({ message: 'no remedy here' }).remedy).toBeUndefined();
    expect(new Set(REMEDY_IDS).size).toBe(REMEDY_IDS.length);
  });

  it("an anonymous pull refused: the backend's credentials hint (or the kit's) is the remedy; credentials rejected or a missing image name none", () => {
    const ctx = { backend: 'toy', image: 'registry.example/private:1' };
    const anonymous = pullFailure('unauthorized: authentication required', { ...ctx, hadCredentials: false });
    expect(anonymous.remedy).toEqual({ id: 'image-auth', says: 'pass spec.image.auth' });
    expect(anonymous.message).toContain(`(no credentials were found for this registry: ${anonymous.remedy!.says})`);

    const hint = remedied('image-auth-docker-config', 'pass spec.image.auth or log in with docker login');
    const own = pullFailure('unauthorized: authentication required', { ...ctx, hadCredentials: false, credentialsHint: hint });
    expect(own.remedy).toEqual(hint.remedy);
    expect(own.message).toContain(hint.remedy.says);
    // A plain-string hint names no remedy.
    expect(pullFailure('denied', { ...ctx, hadCredentials: false, credentialsHint: 'ask your admin' }).remedy).toBeUndefined();

    expect(pullFailure('unauthorized', { ...ctx, hadCredentials: true }).remedy).toBeUndefined();
    expect(pullFailure('manifest unknown', { ...ctx, hadCredentials: false }).remedy).toBeUndefined();
  });

  it("a capability refused: a remedied hint's remedy is the CapabilityError's, a plain hint none", () => {
    const spec = parseEnvironmentSpec({ image: { build: { context: '/tmp/ctx' } } });
    const hint = remedied('builder', 'pass options.builder', (fix) => `${fix}, or build the image elsewhere`);
    const refused = (() => {
      try {
        assertSupported(spec, CAPABILITIES, 'toy', { imageBuild: hint });
      } catch (error) {
        return error as ConfigError;
      }
      throw new Error('assertSupported accepted a build on a backend that cannot build');
    })();
    expect(refused.remedy).toEqual(hint.remedy);
    expect(refused.message).toMatch(/; pass options\.builder, or build the image elsewhere$/);
    expect(() => assertSupported(spec, CAPABILITIES, 'toy', { imageBuild: 'build it elsewhere' })).toThrow(
      expect.objectContaining({ remedy: undefined, message: expect.stringMatching(/build it elsewhere$/) }),
    );
  });

  it('a journal of another run: the way on (fresh: true, or another journal) is the remedy', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-remedy-'));
    dirs.push(dir);
    const journal = join(dir, 'journal.jsonl');
    await runTrials([{ id: 't' }], async () => ({ reward: 1 }), { journal, taskId: (t) => t.id, runIdentity: { agent: 'a' } });
    const refused = await runTrials([{ id: 't' }], async () => ({ reward: 1 }), { journal, taskId: (t) => t.id, runIdentity: { agent: 'b' } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(RunMismatchError.isInstance(refused)).toBe(true);
    const { remedy, message } = refused as RunMismatchError;
    expect(remedy?.id).toBe('fresh-journal');
    expect(message).toContain(remedy!.says);
    expect(remedy!.says).toMatch(/^pass fresh: true to start over/);
  });

  it('survives serializeError and JSON, on the error and on each cause, as result.json records it', () => {
    const inner = new ConfigError({ ...remedied('kube-context', 'set a context, or pass options.kubeconfig', (fix) => `no cluster: ${fix}`) });
    const outer = new ConfigError({
      cause: inner,
      ...remedied('namespace', 'options.namespace', (o) => `cannot start: ${o} is wrong`),
    });
    const read = JSON.parse(JSON.stringify(serializeError(outer)));
    expect(read.remedy).toEqual({ id: 'namespace', says: 'options.namespace' });
    expect(read.cause.remedy).toEqual({ id: 'kube-context', says: 'set a context, or pass options.kubeconfig' });
    expect(serializeError(new ConfigError({ message: 'plain' }))).not.toHaveProperty('remedy');
  });
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';
import { REMEDY_IDS, classifyFailure, redactSecrets, serializeError, type AttemptFailure, type Backend } from '@berth/core';
import { pullFailure } from '@berth/core/backend-kit';
import { TaskSnapshots, type AttemptResultFile, type HarborTaskSummary } from '@berth/harbor';
// The Docker backend's hint is not part of its package's API; its source is what the CLI meets.
import { CREDENTIALS_HINT } from '../../backend-docker/src/docker-errors.js';
import { CLI_WORDS, checkInCliWords, cliWords, hintInCliWords, remediesOf } from '../src/cli-words.js';
import type { JobData } from '../src/job/job-data.js';
import { paint } from '../src/report/ansi.js';
import { taskTable } from '../src/report/task-table.js';
import { describeFailure } from '../src/run/settled-line.js';

// berth's libraries name what fixes an error with a remedy; the CLI says it with its flags and
// files, by the remedy's id, replacing exactly the words the library used.

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
afterEach(() => vi.unstubAllEnvs());
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-cli-words-'));
  dirs.push(dir);
  return dir;
}

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

/** What the CLI prints of an error (as bin.ts does), and of its result.json record (as the run's lines and reports do). */
function printed(error: Error): string {
  const live = cliWords(redactSecrets(error.message), remediesOf(error));
  const record = JSON.parse(JSON.stringify(serializeError(error)));
  expect(cliWords(record.message, remediesOf(record)), 'from the serialised error').toBe(live);
  return live;
}

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1' } }]
users: [{ name: u, user: { token: not-a-real-one } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

describe('remedies in the CLI', () => {
  it('has words for every remedy id', () => {
    // The record's type already requires every id; this catches a record built another way (or cast).
    expect(REMEDY_IDS.filter((id) => typeof CLI_WORDS[id] !== 'string' || CLI_WORDS[id] === '')).toEqual([]);
  });

  it('says an anonymous pull refused the way the CLI passes credentials: docker login', () => {
    const at = { backend: 'docker', image: 'localhost:5000/private:1', hadCredentials: false };
    expect(printed(pullFailure('unauthorized: authentication required', at))).toBe(
      'pulling localhost:5000/private:1 failed: unauthorized: authentication required (no credentials were found for this registry: log in with docker login)',
    );
    expect(printed(pullFailure('unauthorized: authentication required', { ...at, credentialsHint: CREDENTIALS_HINT }))).toBe(
      "pulling localhost:5000/private:1 failed: unauthorized: authentication required (no credentials were found for this registry: log in with docker login (berth reads Docker's config, or $DOCKER_CONFIG))",
    );
  });

  it('says the kubeconfig and the builder of the k8s backend as flags', async () => {
    const dir = await tempDir();
    const missing = thrown(() => createK8sBackend({ kubeconfig: join(dir, 'missing') }).target);
    expect(printed(missing)).toMatch(/^cannot load the kubeconfig \(.*\): give --kubeconfig <file> \(and --context <name>\), or set KUBECONFIG$/);

    await writeFile(join(dir, 'kubeconfig'), KUBECONFIG);
    const k8s = createK8sBackend({ kubeconfig: join(dir, 'kubeconfig') });
    const built = thrown(() => k8s.environment({ image: { build: { context: dir } } }));
    expect(printed(built)).toBe(
      `the k8s backend cannot build images (spec.image.build, from ${dir}); give --build-repository <registry/repo> (the local Docker engine builds the image and pushes it there for the cluster to pull), or build and push it yourself and set docker_image`,
    );
    expect(hintInCliWords(k8s.hints.snapshot!)).toBe(
      "Kubernetes' API cannot save a pod's filesystem as an image (that takes the node's container runtime): build the set-up environment into the task's image instead (environment/Dockerfile, with --build-repository <registry/repo>), or snapshot on Docker or Modal",
    );
  });

  it("says Modal's token as the environment variables the CLI reads", async () => {
    const home = await tempDir();
    vi.stubEnv('HOME', home);
    vi.stubEnv('MODAL_TOKEN_ID', undefined);
    vi.stubEnv('MODAL_TOKEN_SECRET', undefined);
    expect(printed(thrown(() => createModalBackend().target))).toBe(
      `no Modal token found: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run \`modal token new\` (looked in ${join(home, '.modal.toml')})`,
    );
  });

  it('says snapshotSetup as --snapshot-setup', () => {
    const backend = (snapshot: boolean) => ({ name: 'toy', capabilities: { snapshot } }) as Backend;
    expect(printed(thrown(() => new TaskSnapshots(backend(false), { command: 'true' })))).toBe(
      'the toy backend cannot snapshot a sandbox (capabilities.snapshot is false): run without --snapshot-setup, or on a backend that can (docker, modal)',
    );
    expect(printed(thrown(() => new TaskSnapshots(backend(true), { command: ' ' })))).toBe(
      '--snapshot-setup is the shell command that sets a task up; got none',
    );
  });

  it("applies the remedies of a failure's causes and of a preflight check, and nothing else", () => {
    const inner = pullFailure('unauthorized', { backend: 'docker', image: 'r/i:1', hadCredentials: false });
    const failure: AttemptFailure = {
      category: 'transient_infra',
      type: 'ImagePullError',
      message: `start failed: ${inner.message}`,
      retryable: false,
      unclassified: false,
      error: serializeError(new Error(`start failed: ${inner.message}`, { cause: inner })),
    };
    expect(describeFailure(failure)).toBe(
      'transient_infra ImagePullError: start failed: pulling r/i:1 failed: unauthorized (no credentials were found for this registry: log in with docker login)',
    );
    expect(checkInCliWords({ message: 'namespace from options.namespace', remedy: { id: 'namespace', says: 'options.namespace' } })).toBe(
      'namespace from --namespace',
    );
    // Words with no remedy naming them stay the library's: no guessing from prose.
    expect(cliWords('pass spec.image.auth', [])).toBe('pass spec.image.auth');
    // A remedy this CLI does not know (a record from another berth) is left as the library said it.
    expect(cliWords('pass options.foo', [{ id: 'foo' as never, says: 'pass options.foo' }])).toBe('pass options.foo');
  });

  it("says a task's failure in the report's table from the remedy its attempt's result.json recorded", () => {
    const error = pullFailure('unauthorized', { backend: 'docker', image: 'r/i:1', hadCredentials: false });
    const failure = { ...classifyFailure(error), error: serializeError(error) };
    const summary = {
      taskId: 'private',
      status: 'infra_failed',
      attempts: [],
      failureType: failure.type,
      failureMessage: failure.message,
    } as unknown as HarborTaskSummary;
    const attempt = {
      taskId: 'private',
      attempt: 1,
      durationMs: 1,
      status: 'failed' as const,
      causes: [],
      chosen: false,
      dir: '',
      result: { failure } as AttemptResultFile,
    };
    const table = taskTable({ jobDir: '', report: {}, tasks: [{ summary, attempts: [attempt] }] } as unknown as JobData, paint(false)).join('\n');
    expect(table).toContain('ImagePullError: pulling r/i:1 failed: unauthorized (no credentials were found for this registry: log in with docker login)');
  });
});

// Modal's official Python SDK (the version pinned in sdk/requirements-sdk.lock.txt, installed by
// test/setup/setup.sh into its own venv) runs the scenario of sdk/sdk_scenario.py against the
// simulator, on the SDK's default path: V2 sandboxes, exec and stdio through the task command
// router. The SDK is the reference for what Modal's clients send and expect, so this is the check
// that the simulator speaks Modal as Modal's own client sees it. Every step must pass, and the
// simulator's record of the calls shows the path taken: V2 RPCs only, nothing unimplemented.
// Needs the Docker engine, berth-test/busybox:latest and the private registry on 127.0.0.1:5000.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenForTokens, type ReachableListener } from '@berth/conformance';
import { bridgeGateway, secondHostAddress } from '@berth/test-support/docker-bridge';
import { ModalSimulator, sandboxVersionOf } from '@berth/test-support/modal-sim';
import { readSdkDescriptors } from '@berth/test-support/modal-sim/sdk-schema';
import { SDK_PYTHON, assertSdkVenv, sdkEnv } from './sdk/sdk-python.js';

const SCENARIO = new URL('./sdk/sdk_scenario.py', import.meta.url).pathname;
/** A tag of its own (test/setup/setup.sh pushes it), so other test files' pulls cannot make an anonymous pull succeed. */
const PRIVATE = '127.0.0.1:5000/berth/private-busybox:sdk';
const SECRET = 'berth-registry';
/** The V1 sandbox RPCs (and V1 stdio): the SDK's default path must not need them. */
const V1_ONLY = [
  'SandboxCreate',
  'SandboxGetTaskId',
  'SandboxWait',
  'SandboxTerminate',
  'SandboxList',
  'SandboxTagsSet',
  'SandboxTagsGet',
  'SandboxGetLogs',
  'SandboxStdinWrite',
  'TaskGetCommandRouterAccess',
];

interface Step {
  name: string;
  ok: boolean;
  secs: number;
  value?: unknown;
  error?: string;
}

let sim: ModalSimulator;
let dir: string;
let run: { code: number | null; steps: Map<string, Step>; stdout: string; stderr: string };
let allowed: ReachableListener;
let denied: ReachableListener;

function runScenario(env: Record<string, string>, timeoutMs: number): Promise<typeof run> {
  return new Promise((resolve, reject) => {
    const child = spawn(SDK_PYTHON, [SCENARIO], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const steps = new Map<string, Step>();
      for (const line of stdout.split('\n'))
        if (line.startsWith('STEP ')) {
          const step = JSON.parse(line.slice(5)) as Step;
          steps.set(step.name, step);
        }
      resolve({ code, steps, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  assertSdkVenv();
  sim = await ModalSimulator.start();
  sim.addSecret(SECRET, { REGISTRY_USERNAME: 'berth', REGISTRY_PASSWORD: 'berth-test-secret' });
  dir = mkdtempSync(join(tmpdir(), 'berth-sdk-scenario-'));
  allowed = await listenForTokens(await bridgeGateway());
  denied = await listenForTokens(await secondHostAddress());
  const env = {
    ...sdkEnv(sim, dir),
    SDK_PRIVATE_IMAGE: PRIVATE,
    SDK_REGISTRY_SECRET: SECRET,
    SDK_ALLOWED: `${allowed.host}:${allowed.port}`,
    SDK_DENIED: `${denied.host}:${denied.port}`,
  };
  run = await runScenario(env, 280_000);
  // BERTH_SDK_SCENARIO_LOG=<file>: the SDK's own output (steps on stdout, tracebacks on stderr).
  if (process.env.BERTH_SDK_SCENARIO_LOG) writeFileSync(process.env.BERTH_SDK_SCENARIO_LOG, `${run.stdout}\n--- stderr\n${run.stderr}`);
}, 300_000);

afterAll(async () => {
  await sim?.close();
  await allowed?.close();
  await denied?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const step = (name: string): Step => {
  const s = run.steps.get(name);
  if (!s) throw new Error(`step ${name} did not run\n${run.stdout}\n${run.stderr.slice(-4000)}`);
  if (!s.ok) throw new Error(`step ${name} failed: ${s.error}\n${run.stderr.slice(-4000)}`);
  return s;
};

describe("Modal's Python SDK against the simulator", () => {
  it('is the pinned SDK, trusting the simulator through a per-run certifi bundle', () => {
    const sdk = readSdkDescriptors().sdk;
    expect(step('sdk').value).toStrictEqual({ modal: sdk.modal, certifi: join(dir, 'pythonpath', 'certifi', 'cacert.pem') });
  });

  it('refuses a wrong token (AuthError), finds the app and the environment', () => {
    expect(step('wrong_token').value).toMatch(/^AuthError: Invalid token id or secret/);
    expect(step('app_lookup').value).toMatch(/^ap-/);
    expect(step('environment').value).toMatch(/^en-/);
  });

  it('builds images from the registry: local, private with a named and an inline secret; fails without credentials and for a missing image', () => {
    for (const name of ['image_local', 'image_private_named_secret', 'image_private_dict_secret']) expect(step(name).value).toMatch(/^im-/);
    expect(step('image_private_no_secret').value).toMatch(/^ImageBuildError: .*(unauthorized|authentication required|pull access denied)/s);
    expect(step('image_not_found').value).toMatch(/^ImageBuildError: .*(not found|manifest unknown)/s);
  });

  it('creates a V2 sandbox and execs in it: env, workdir, stdin, a timeout, 3 MiB of output', () => {
    expect(sandboxVersionOf(String(step('sandbox_create').value))).toBe(2);
    expect(step('exec_env_workdir').value).toBe('bar:from-create:from-dict:/etc\n');
    expect(step('exec_stdin').value).toBe('hello stdin\n');
    expect(step('exec_timeout').value).toMatchObject({ returncode: expect.any(Number) });
    expect(step('exec_3mib').value).toBe(3 * 1024 * 1024);
  });

  it("snapshots the sandbox's filesystem as the SDK does (TaskSnapshotFilesystem), starts a sandbox from the image, deletes it (ImageDelete)", () => {
    expect(step('snapshot_filesystem').value).toMatch(/^im-/);
    expect(sim.calls.map((c) => c.path)).toEqual(
      expect.arrayContaining([expect.stringMatching(/TaskSnapshotFilesystem$/), expect.stringMatching(/ImageDelete$/)]),
    );
  });

  it('i6pn as the SDK makes it: each sandbox resolves its own fdaa:: address as i6pn.modal.local, and one reaches the other there under an empty allowlist', () => {
    expect(step('i6pn').value).toStrictEqual({ prefix: 'fdaa', reached: 'i6pn-hello' });
  });

  it('an outbound CIDR allowlist made by the SDK lets its address out and not another (checked by both listeners)', () => {
    expect(step('cidr_allowlist').value).toStrictEqual({ allowed: 'reached', denied: 'blocked' });
    expect(allowed.received('sdk-cidr-allowed')).toBe(true);
    expect(denied.received('sdk-cidr-denied')).toBe(false);
  });

  it("tags, lists, reads the sandbox's output, terminates, waits and polls; the output stays readable after the end", () => {
    expect(step('tags').value).toStrictEqual({ suite: 'sdk-scenario', k: 'v' });
    expect(step('list').value).toStrictEqual([step('sandbox_create').value]);
    expect(step('sandbox_stdout').value).toBe('out-line\n');
    expect(step('poll_running').value).toBeNull();
    step('terminate');
    expect(step('wait').value).toBe(137);
    expect(step('poll_after').value).toBe(137);
    expect(step('output_after_exit').value).toStrictEqual({ stdout: 'out-line\n', stderr: 'err-line\n' });
  });

  it('every step passed, on V2 RPCs only, with nothing unimplemented, from the SDK as itself', () => {
    expect({ code: run.code, failed: [...run.steps.values()].filter((s) => !s.ok).map((s) => `${s.name}: ${s.error}`) }).toStrictEqual({
      code: 0,
      failed: [],
    });
    const method = (path: string) => path.split('/').pop() ?? '';
    expect(sim.calls.filter((c) => V1_ONLY.includes(method(c.path))).map((c) => c.path)).toStrictEqual([]);
    expect(sim.calls.filter((c) => c.code === 12).map((c) => c.path)).toStrictEqual([]);
    const used = new Set(sim.calls.map((c) => method(c.path)));
    for (const rpc of [
      'EnvironmentGetOrCreate',
      'AuthTokenGet',
      'SandboxCreateV2',
      'SandboxGetTaskIdV2',
      'SandboxGetCommandRouterAccess',
      'SandboxWaitV2',
      'SandboxTerminateV2',
      'SandboxListV2',
      'SandboxTagsSetV2',
      'SandboxTagsGetV2',
      'SandboxStdioReadV2',
      'TaskExecStart',
      'TaskExecStdioRead',
      'TaskExecStdinWrite',
    ])
      expect(used, rpc).toContain(rpc);
    const controlPlane = sim.calls.filter((c) => c.path.startsWith('/modal.client.ModalClient/'));
    expect(new Set(controlPlane.map((c) => `${c.clientType}/${c.clientVersion}`))).toStrictEqual(new Set([`1/${readSdkDescriptors().sdk.modal}`]));
  });
});

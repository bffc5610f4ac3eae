// 48 real task.toml files by other people (test/fixtures/harbor-corpus, each with its SOURCE):
// every one loads with harbor's semantics or is refused naming what berth does not run, and no
// field of a loaded task is dropped without being applied or noted.
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BerthError, CapabilityError, ConfigError } from '@berth/core';
import { loadHarborTask, parseSizeToMb, type HarborNetwork, type HarborTask } from '@berth/harbor';
import { addStepInstructions } from './support.js';

const CORPUS = fileURLToPath(new URL('../../../test/fixtures/harbor-corpus/', import.meta.url));

/** What each file must come to: loaded, or refused with this error type and field. */
const REFUSED: Record<string, [type: 'ConfigError' | 'CapabilityError', field: string]> = {
  // Compose tasks load (their services become spec.services: compose.unit.test.ts); these two set
  // harbor's legacy main overrides (deploy limits from ${CPUS}, log and dataset host binds), which berth does not run.
  // 09's docker-compose.yml is not a file harbor reads (only .yaml): it loads as harbor runs it.
  '12-quesma-airgapped-compose': ['ConfigError', 'services.main.deploy'],
  '13-openagora-lookalike-nonharbor': ['ConfigError', 'environment.docker_image'],
  '15-titanium-task-only-no-env': ['ConfigError', 'environment.docker_image'],
  '21-expo-healthcheck-no-dockerfile': ['ConfigError', 'environment.docker_image'],
  '25-humanevalpack-compose-shared-volume': ['ConfigError', 'services.main.deploy'],
  '28-opsskills-skills-dir-no-dockerfile': ['ConfigError', 'environment.docker_image'],
  '35-raft-nonstandard-scoring-hardware': ['ConfigError', 'environment.docker_image'],
  '40-infrabench-vm-cluster-nodes': ['ConfigError', 'environment.docker_image'],
};

/** Fields that do not change what runs: accepted as harbor accepts them. */
const INERT = [/^metadata(\.|$)/, /^task(\.|$)/, /^(version|schema_version|source)$/, /^(verifier\.)?environment\.os$/];

/** harbor's network_mode as berth holds it: an allowlist is an object (its entries are checked in spec-and-reward's tests). */
const mode = (m: unknown) => (m === 'public' ? 'public' : m === 'allowlist' ? 'allowlist' : 'none');
const held = (n: HarborNetwork) => (typeof n === 'string' ? n : 'allowlist');

/** One sandbox's settings as the loaded task holds them: the agent's, or a separate verifier's. */
interface SandboxView {
  image?: string;
  buildTimeoutSec: number;
  resources: HarborTask['resources'];
  env: Record<string, string>;
  workdir?: string;
  healthcheck?: HarborTask['healthcheck'];
  /** The network this sandbox's table gives; undefined where a phase's network_mode overrides it. */
  baseline?: HarborNetwork;
}

/** How a sandbox shows that a field of its table (`environment.*` or `verifier.environment.*`) was applied. */
function appliedToSandbox(key: string, sub: string | undefined, value: unknown, view: SandboxView, table: Record<string, unknown>): boolean | undefined {
  if (key === 'env') return view.env[sub!] === value;
  if (key === 'healthcheck') {
    const h = view.healthcheck!;
    const field = {
      command: h.command,
      interval_sec: h.intervalSec,
      timeout_sec: h.timeoutSec,
      start_period_sec: h.startPeriodSec,
      start_interval_sec: h.startIntervalSec,
      retries: h.retries,
    }[sub!];
    return field === value;
  }
  switch (key) {
    case 'docker_image':
      return view.image === value;
    case 'build_timeout_sec':
      return view.buildTimeoutSec === value;
    case 'cpus':
      return view.resources.cpus === value;
    case 'memory_mb':
      return view.resources.memoryMb === value;
    case 'memory':
      return typeof value === 'string' ? view.resources.memoryMb === parseSizeToMb(value) : undefined;
    case 'storage_mb':
      return view.resources.storageMb === value;
    case 'storage':
      return typeof value === 'string' ? view.resources.storageMb === parseSizeToMb(value) : undefined;
    case 'gpus':
      return view.resources.gpus === value;
    case 'gpu_types':
      // Any of them, with a count; without one harbor ignores them (a note says so).
      return (view.resources.gpus ?? 0) > 0 ? JSON.stringify(view.resources.gpuTypes ?? []) === JSON.stringify(value) : undefined;
    case 'allow_internet':
      return table.network_mode === undefined && view.baseline ? held(view.baseline) === (value ? 'public' : 'none') : true;
    case 'network_mode':
      return view.baseline ? held(view.baseline) === mode(value) : true;
    case 'workdir':
      return view.workdir === value;
    default:
      return undefined;
  }
}

/** How a loaded task shows that a field was applied; undefined when the field is not one berth applies. */
function applied(path: string, value: unknown, t: HarborTask, root: Record<string, unknown>): boolean | undefined {
  const parts = path.split('.');
  const verifierToml = (root.verifier ?? {}) as Record<string, unknown>;
  if (path === 'environment.mcp_servers') return t.agentConfig.mcpServers.length === (value as unknown[]).length;
  if (path === 'environment.skills_dir') return t.agentConfig.skillsDir === value;
  if (parts[0] === 'environment') {
    const view: SandboxView = {
      ...('ref' in t.image ? { image: t.image.ref } : {}),
      buildTimeoutSec: t.buildTimeoutSec,
      resources: t.resources,
      env: t.env.environment,
      ...(t.workdir ? { workdir: t.workdir } : {}),
      ...(t.healthcheck ? { healthcheck: t.healthcheck } : {}),
      baseline: t.network.environment,
    };
    return appliedToSandbox(parts[1]!, parts[2], value, view, (root.environment ?? {}) as Record<string, unknown>);
  }
  if (path === 'verifier.environment.mcp_servers' && Array.isArray(value) && value.length === 0) return true;
  if (parts[0] === 'verifier' && parts[1] === 'environment' && parts.length > 2) {
    const v = t.verifierEnvironment!;
    // The verifier phase's own network_mode, when given, overrides the sandbox's.
    const baseline = verifierToml.network_mode === undefined ? t.network.verifier : undefined;
    const view: SandboxView = {
      ...('ref' in v.image ? { image: v.image.ref } : {}),
      buildTimeoutSec: v.buildTimeoutSec,
      resources: v.resources,
      env: v.env,
      ...(v.workdir ? { workdir: v.workdir } : {}),
      ...(v.healthcheck ? { healthcheck: v.healthcheck } : {}),
      ...(baseline ? { baseline } : {}),
    };
    return appliedToSandbox(parts[2]!, parts[3], value, view, verifierToml.environment as Record<string, unknown>);
  }
  const [table, key, sub] = parts;
  if (table === 'verifier' && key === 'env') return t.env.verifier[sub!] === value;
  if (table === 'solution' && key === 'env') return t.env.solution[sub!] === value;
  switch (path) {
    case 'agent.network_mode':
      return t.network.agent === mode(value);
    case 'verifier.network_mode':
      return t.network.verifier === mode(value);
    case 'agent.user':
      return t.users.agent === String(value);
    case 'verifier.user':
      return t.users.verifier === String(value);
    case 'agent.timeout_sec':
      return t.agentTimeoutSec === value;
    case 'verifier.timeout_sec':
      return t.verifierTimeoutSec === value;
    case 'verifier.environment_mode':
      return value === 'shared' ? t.verifierEnvironment === undefined : t.verifierEnvironment !== undefined;
    case 'artifacts':
      return t.artifacts.length === (value as unknown[]).length;
    case 'multi_step_reward_strategy':
      // Applied to a multi-step task; a single-step one has no steps to combine (harbor ignores it too).
      return t.steps ? t.multiStepRewardStrategy === value : undefined;
    case 'steps':
      return stepsApplied(value as Array<Record<string, unknown>>, t);
    case 'verifier.collect': {
      // [[verifier.collect]]: every entry, command and timeout as written (harbor's 60 s by default).
      const entries = value as Array<{ command: string; timeout_sec?: number }>;
      const got = t.verifierCollect ?? [];
      return got.length === entries.length && entries.every((e, i) => got[i]!.command === e.command && got[i]!.timeoutSec === (e.timeout_sec ?? 60));
    }
    default:
      return undefined;
  }
}

/** Each [[steps]] entry as the loaded task holds it: its name, timeouts, env, healthcheck, threshold and artifacts. */
function stepsApplied(entries: Array<Record<string, unknown>>, t: HarborTask): boolean {
  const steps = t.steps ?? [];
  return (
    steps.length === entries.length &&
    entries.every((entry, i) => {
      const step = steps[i]!;
      const agent = (entry.agent ?? {}) as Record<string, unknown>;
      const verifier = (entry.verifier ?? {}) as Record<string, unknown>;
      const health = entry.healthcheck as Record<string, unknown> | undefined;
      return (
        step.name === entry.name &&
        step.agentTimeoutSec === (agent.timeout_sec ?? t.agentTimeoutSec) &&
        // harbor's step verifier table has its own 600 s default: the task's [verifier] timeout is not inherited.
        step.verifierTimeoutSec === (verifier.timeout_sec ?? 600) &&
        JSON.stringify(step.verifierEnv) === JSON.stringify(verifier.env ?? {}) &&
        step.minReward === entry.min_reward &&
        step.healthcheck?.command === health?.command &&
        step.healthcheck?.retries === (health ? (health.retries ?? 3) : undefined) &&
        step.artifacts.length === ((entry.artifacts as unknown[] | undefined)?.length ?? 0)
      );
    })
  );
}

/** Every leaf of a TOML document as [dotted path, value]; arrays are leaves. */
function leaves(table: Record<string, unknown>, at = ''): Array<[string, unknown]> {
  return Object.entries(table).flatMap(([key, value]) => {
    const path = at ? `${at}.${key}` : key;
    const isTable = value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);
    return isTable ? leaves(value as Record<string, unknown>, path) : [[path, value] as [string, unknown]];
  });
}

let work: string;
const names: string[] = [];
/** Host variables for every ${VAR} the corpus names (no value is real). */
const host = new Proxy({} as Record<string, string>, { get: (_, name) => `corpus-${String(name)}` });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'berth-corpus-'));
  for (const name of (await readdir(CORPUS)).filter((n) => /^\d\d-/.test(n)).sort()) {
    names.push(name);
    // The corpus keeps task.toml and environment/ only: give each a verifier so it is a task.
    await cp(join(CORPUS, name), join(work, name), { recursive: true });
    await mkdir(join(work, name, 'tests'), { recursive: true });
    await writeFile(join(work, name, 'tests', 'test.sh'), '#!/bin/sh\n');
    // ...and a multi-step one the instruction harbor requires of each step.
    await addStepInstructions(join(work, name));
  }
});
afterAll(() => rm(work, { recursive: true, force: true }));

describe('the harbor corpus', () => {
  it('holds 48 real task.toml files, each with its source', async () => {
    expect(names).toHaveLength(48);
    for (const name of names)
      expect((await readFile(join(CORPUS, name, 'SOURCE'), 'utf8')).trim()).toMatch(/^github:[\w.-]+\/[\w.-]+@[0-9a-f]{40} (\S+\/)?task\.toml$/);
  });

  it('each task loads, or is refused with the field and what to do', async () => {
    for (const name of names) {
      const outcome = await loadHarborTask(join(work, name), { hostEnv: host }).then(
        () => 'loaded',
        (error: unknown) => error,
      );
      const expected = REFUSED[name];
      if (!expected) {
        expect(outcome, `${name}: ${String(outcome)}`).toBe('loaded');
        continue;
      }
      const [type, field] = expected;
      expect(BerthError.isInstance(outcome) && outcome.type, name).toBe(type);
      const where = ConfigError.isInstance(outcome) ? outcome.path : CapabilityError.isInstance(outcome) ? outcome.capability : undefined;
      expect(where, name).toBe(field);
      // The file it is in: task.toml, or environment/docker-compose.yaml for a compose key.
      const file = field.startsWith('services.') ? join(work, name, 'environment', 'docker-compose.yaml') : join(work, name, 'task.toml');
      expect((outcome as Error).message, name).toContain(file);
    }
  });

  it('no field of a loaded task is dropped: each is applied, inert, or in a recorded note', async () => {
    let checked = 0;
    for (const name of names.filter((n) => !REFUSED[n])) {
      const root = parseToml(await readFile(join(work, name, 'task.toml'), 'utf8')) as Record<string, unknown>;
      const task = await loadHarborTask(join(work, name), { hostEnv: host });
      for (const [path, value] of leaves(root)) {
        if (INERT.some((re) => re.test(path))) continue;
        const noted = task.notes.some((note) => path.startsWith(note.split(' ')[0]!) || note.startsWith(path));
        const ok = applied(path, value, task, root);
        expect(
          ok === true || (ok === undefined && noted),
          `${name}: ${path} = ${JSON.stringify(value)} is neither applied nor noted (notes: ${task.notes.join(' | ')})`,
        ).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(150);
  });

  it('a ${VAR} without a default that the host does not set stops the load, naming it', async () => {
    const error = await loadHarborTask(join(work, '17-johnbuck-verifier-env-judge'), { hostEnv: {} }).catch((e: unknown) => e);
    expect(ConfigError.isInstance(error) && error.path).toMatch(/^(environment|verifier)\.env$/);
    expect((error as Error).message).toMatch(/needs the host environment variable/);
  });
});

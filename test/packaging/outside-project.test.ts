// What a new user gets from npm: every workspace package packed as `npm publish` would, installed
// from the tarballs into a project outside this repository, and used from there. It checks what
// the tarballs ship (LICENSE, README, what the READMEs and shipped messages point at), that their
// published types compile under `tsc --strict` without skipLibCheck, and that the JavaScript and
// the `berth` binary run, and that the installed guardian removes a killed program's container
// (that case needs the Docker engine and berth-test/busybox:latest). It needs the build (`npm test` runs `tsc -b` first) and npm's cache as
// `npm ci` left it: the outside project is installed with `npm ci --offline` from a lockfile made
// of this repository's, so nothing is fetched.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));

interface Manifest {
  name: string;
  version: string;
  license?: string;
  main?: string;
  types?: string;
  bin?: Record<string, string>;
  exports?: Record<string, { types: string; default: string }>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optionalDependencies?: Record<string, string>;
  engines?: Record<string, string>;
}

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [key: string]: unknown;
}

interface Packed {
  name: string;
  filename: string;
  integrity: string;
  files: { path: string }[];
}

interface Workspace {
  /** The package's directory, relative to the repository's root. */
  rel: string;
  dir: string;
  manifest: Manifest;
  tarball: string;
  integrity: string;
  files: Set<string>;
}

const rootManifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as Manifest & { workspaces: string[] };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: error && typeof error.code !== 'number' ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

function show(r: Run): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-20_000)}\n--- stderr\n${r.stderr.slice(-20_000)}`;
}

async function mustRun(file: string, args: string[], cwd: string): Promise<Run> {
  const r = await run(file, args, cwd);
  if (r.code !== 0) throw new Error(`${file} ${args.join(' ')} (in ${cwd}) failed: ${show(r)}`);
  return r;
}

/**
 * The outside project's lockfile: this repository's, with the workspace links replaced by the
 * tarballs and everything the outside project does not reach left out. Same versions, same
 * integrity, so `npm ci --offline` takes every package from the cache `npm ci` filled.
 */
const PRIVATE = new Set(
  rootManifest.workspaces
    .map((ws) => JSON.parse(readFileSync(join(repo, ws, 'package.json'), 'utf8')) as { name: string; private?: boolean })
    .filter((m) => m.private)
    .map((m) => m.name),
);

function outsideLock(root: Manifest, workspaces: Workspace[]): unknown {
  const repoLock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const all: Record<string, LockEntry> = {};
  const ours = new Set(workspaces.map((w) => w.manifest.name));
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (!path.startsWith('node_modules/')) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (ours.has(name)) continue;
    // A private workspace (the tests' own support) is never published: nothing outside reaches it.
    if (entry.link && PRIVATE.has(name)) continue;
    if (entry.link) throw new Error(`the repository's lockfile links ${path}, which the outside project cannot have`);
    // npm works the dev and peer flags out again for the outside project; "optional" stays, so
    // that packages for other platforms are skipped as they are by the repository's own `npm ci`.
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...rest } = entry;
    all[path] = rest;
  }
  for (const w of workspaces) {
    const m = w.manifest;
    all[`node_modules/${m.name}`] = {
      version: m.version,
      resolved: `file:tarballs/${w.tarball}`,
      integrity: w.integrity,
      license: m.license,
      dependencies: m.dependencies,
      peerDependencies: m.peerDependencies,
      peerDependenciesMeta: m.peerDependenciesMeta,
      bin: m.bin,
      engines: m.engines,
    };
  }
  // Keep what the outside project reaches: node_modules resolution from each dependent, as npm does.
  const keep = new Set<string>();
  const visit = (from: string, deps: Record<string, string>): void => {
    for (const name of Object.keys(deps)) {
      let base = from;
      for (;;) {
        const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
        if (all[candidate]) {
          if (!keep.has(candidate)) {
            keep.add(candidate);
            const e = all[candidate];
            const peers = Object.fromEntries(Object.entries(e.peerDependencies ?? {}).filter(([p]) => !e.peerDependenciesMeta?.[p]?.optional));
            visit(candidate, { ...e.dependencies, ...e.optionalDependencies, ...peers });
          }
          break;
        }
        if (!base) {
          // An optional peer or an optional dependency for another platform may be absent.
          break;
        }
        const up = base.lastIndexOf('/node_modules/');
        base = up < 0 ? '' : base.slice(0, up);
      }
    }
  };
  visit('', { ...root.dependencies, ...root.devDependencies });
  const packages: Record<string, unknown> = {
    '': { name: root.name, version: root.version, dependencies: root.dependencies, devDependencies: root.devDependencies },
  };
  for (const path of [...keep].sort()) packages[path] = JSON.parse(JSON.stringify(all[path]));
  return { name: root.name, version: root.version, lockfileVersion: 3, requires: true, packages };
}

/** What the outside user writes: every public entry point, its main functions and types. */
const userCode = `
import * as core from '@berth/core';
import * as kit from '@berth/core/backend-kit';
import * as docker from '@berth/backend-docker';
import * as k8s from '@berth/backend-k8s';
import * as modal from '@berth/backend-modal';
import * as conformance from '@berth/conformance';
import * as harbor from '@berth/harbor';
import * as serve from '@berth/serve';
import { runTrials, parseEnvironmentSpec, BerthError, type Backend, type Environment, type EnvironmentSpecInput, type RunTrialsOptions } from '@berth/core';
import { defineBackend, type SandboxTransport } from '@berth/core/backend-kit';
import { createDockerBackend, createRegistryImageBuilder, type DockerBackendOptions } from '@berth/backend-docker';
import { createK8sBackend, type K8sBackendOptions } from '@berth/backend-k8s';
import { createModalBackend, type ModalBackendOptions } from '@berth/backend-modal';
import { describeBackendConformance, type ConformanceOptions } from '@berth/conformance';
import { runHarborJob, loadHarborTasks, startTaskSandbox, type HarborJobOptions, type HarborJobReport } from '@berth/harbor';

export const modules = { core, kit, docker, k8s, modal, conformance, harbor, serve };
export const functions = { runTrials, parseEnvironmentSpec, defineBackend, createRegistryImageBuilder, describeBackendConformance, runHarborJob, loadHarborTasks, startTaskSandbox };
export type Types = [Environment, EnvironmentSpecInput, RunTrialsOptions<string>, SandboxTransport, DockerBackendOptions, K8sBackendOptions, ModalBackendOptions, ConformanceOptions, HarborJobOptions, HarborJobReport];

export function backends(): Backend[] {
  return [createDockerBackend(), createK8sBackend({ namespace: 'berth' }), createModalBackend({ appName: 'evals' })];
}

/** The READMEs' first example. */
export async function hello(backend: Backend): Promise<string> {
  await using env = await backend.start({ image: { ref: 'registry.example/team/task:1' }, network: 'public' });
  try {
    return (await env.exec(['echo', 'hello'])).stdout;
  } catch (error) {
    if (BerthError.isInstance(error)) return error.type;
    throw error;
  }
}
`;

const tsconfig = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
  },
  files: ['index.ts'],
};

/**
 * Relative paths in a README's code (inline spans and fenced blocks): `deploy/role.yaml`,
 * `test/sim/`, `berth run examples/tasks`. Each with the README's paragraphs that mention it or a
 * directory it is in.
 */
function readmePaths(text: string): Map<string, string[]> {
  const paragraphs = text.split(/\n\s*\n/);
  const code = [...text.matchAll(/```[^\n]*\n([\s\S]*?)```/g), ...text.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  const found = new Map<string, string[]>();
  for (const token of code.flatMap((c) => c.split(/[\s'"(),;=]+/))) {
    const path = token.replace(/^\.\//, '').replace(/[.:]+$/, '');
    if (!path.includes('/') || !/^[\w.-]+(\/[\w.-]+)*\/?$/.test(path)) continue;
    // A paragraph about a directory speaks for what is in it: examples/tasks for examples/tasks/hello-world.
    const named = (p: string): boolean => path.split('/').some((_, i, parts) => i > 0 && p.includes(parts.slice(0, i + 1).join('/')));
    found.set(path, paragraphs.filter(named));
  }
  return found;
}

/** Paths tracked in the repository (not what a local run left behind, like berth-jobs/). */
function trackedPaths(): (path: string) => boolean {
  const files = new Set<string>();
  const dirs = new Set<string>();
  const list = execFileSync('git', ['ls-files', '-z'], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  for (const file of list.split('\0').filter(Boolean)) {
    files.add(file);
    for (let d = posix.dirname(file); d !== '.'; d = posix.dirname(d)) dirs.add(d);
  }
  return (path) => files.has(path) || dirs.has(path);
}

describe('the packed packages, installed in a project outside the repository', () => {
  let dir = '';
  let project = '';
  const workspaces: Workspace[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-outside-'));
    const tarballs = join(dir, 'project', 'tarballs');
    project = join(dir, 'project');
    await mkdir(tarballs, { recursive: true });
    // What is published: every workspace but the private ones (@berth/test-support, the tests' own).
    const published = rootManifest.workspaces.filter(
      (ws) => !(JSON.parse(readFileSync(join(repo, ws, 'package.json'), 'utf8')) as { private?: boolean }).private,
    );
    for (const ws of published) {
      const d = join(repo, ws);
      if (!existsSync(join(d, 'dist'))) throw new Error(`${ws}/dist is missing: run \`npm run build\` first (\`npm test\` does)`);
    }
    // The cache `npm ci` filled, as this very npm sees it.
    const cache = (await mustRun('npm', ['config', 'get', 'cache'], repo)).stdout.trim();
    const only = published.flatMap((ws) => ['--workspace', ws]);
    const packed = JSON.parse((await mustRun('npm', ['pack', ...only, '--json', '--pack-destination', tarballs], repo)).stdout) as Packed[];
    for (const ws of published) {
      const manifest = JSON.parse(readFileSync(join(repo, ws, 'package.json'), 'utf8')) as Manifest;
      const p = packed.find((x) => x.name === manifest.name);
      if (!p) throw new Error(`npm pack did not pack ${manifest.name}`);
      workspaces.push({ rel: ws, dir: join(repo, ws), manifest, tarball: p.filename, integrity: p.integrity, files: new Set(p.files.map((f) => f.path)) });
    }
    const typesNode = rootManifest.devDependencies?.['@types/node'];
    const manifest: Manifest = {
      name: 'berth-outside-project',
      version: '1.0.0',
      dependencies: Object.fromEntries(workspaces.map((w) => [w.manifest.name, `file:tarballs/${w.tarball}`])),
      devDependencies: typesNode ? { '@types/node': typesNode } : {},
    };
    await writeFile(join(project, 'package.json'), `${JSON.stringify({ ...manifest, private: true, type: 'module' }, null, 2)}\n`);
    await writeFile(join(project, 'package-lock.json'), `${JSON.stringify(outsideLock(manifest, workspaces), null, 2)}\n`);
    await writeFile(join(project, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
    await writeFile(join(project, 'index.ts'), userCode);
    await mustRun('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--cache', cache], project);
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every package ships LICENSE, README.md and the files its package.json names', () => {
    const license = readFileSync(join(repo, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License/);
    for (const w of workspaces) {
      const m = w.manifest;
      expect.soft(m.license, m.name).toBe('MIT');
      expect.soft(w.files.has('LICENSE'), `${m.name} ships LICENSE`).toBe(true);
      expect.soft(w.files.has('README.md'), `${m.name} ships README.md`).toBe(true);
      const installed = join(project, 'node_modules', m.name);
      if (existsSync(join(installed, 'LICENSE'))) expect.soft(readFileSync(join(installed, 'LICENSE'), 'utf8'), `${m.name}'s LICENSE`).toBe(license);
      const named = [m.main, m.types, ...Object.values(m.bin ?? {}), ...Object.values(m.exports ?? {}).flatMap((e) => [e.types, e.default])];
      for (const file of named.filter((f): f is string => !!f)) {
        expect.soft(w.files.has(posix.normalize(file)), `${m.name} ships ${file}, which its package.json names`).toBe(true);
      }
    }
  });

  it('the Kubernetes backend ships the RBAC manifests its README and preflight point at', async () => {
    const k8s = workspaces.find((w) => w.manifest.name === '@berth/backend-k8s')!;
    for (const file of ['deploy/role.yaml', 'deploy/node-reader.yaml']) {
      expect.soft(k8s.files.has(file), `@berth/backend-k8s ships ${file}`).toBe(true);
      expect.soft(existsSync(join(project, 'node_modules/@berth/backend-k8s', file)), `${file} is installed`).toBe(true);
    }
    // preflight's messages name them as @berth/backend-k8s/<path>
    const preflight = await readFile(join(project, 'node_modules/@berth/backend-k8s/dist/preflight.js'), 'utf8');
    expect(preflight).toContain('@berth/backend-k8s/deploy/role.yaml');
    expect(preflight).toContain('@berth/backend-k8s/deploy/node-reader.yaml');
  });

  it('what a README or a shipped message points at is in a tarball, or the text says it is in the repository', async () => {
    const problems: string[] = [];
    const tracked = trackedPaths();
    const byName = new Map(workspaces.map((w) => [w.manifest.name, w]));
    const ships = (w: Workspace, path: string): boolean => w.files.has(path) || [...w.files].some((f) => f.startsWith(`${path}/`));
    for (const w of workspaces) {
      const installed = join(project, 'node_modules', w.manifest.name);
      const readme = await readFile(join(installed, 'README.md'), 'utf8');
      // "@berth/<package>/<path>" in shipped JavaScript (preflight's and errors' messages) and in
      // the README names a file of that package.
      const texts = [{ file: 'README.md', text: readme }];
      for (const file of [...w.files].filter((f) => f.endsWith('.js'))) texts.push({ file, text: await readFile(join(installed, file), 'utf8') });
      for (const { file, text } of texts) {
        for (const m of text.matchAll(/@berth\/([\w-]+)\/([\w./-]+\.[a-z]+)/g)) {
          const target = byName.get(`@berth/${m[1]}`);
          if (target && !ships(target, m[2]!)) problems.push(`${w.manifest.name} ${file}: ${m[0]} is not in @berth/${m[1]}'s tarball`);
        }
      }
      // A path in the README's code that is a file or directory of this package or of the
      // repository must be in a tarball (packages/<dir>/... in that package's), or a paragraph
      // that mentions it must say it is in the repository. Paths that are neither (a task's
      // environment/Dockerfile, a job directory, a path in a sandbox) are not berth's files.
      for (const [path, paragraphs] of readmePaths(readme)) {
        const bare = path.replace(/\/$/, '');
        if (byName.has(bare)) continue;
        const inPackage = tracked(`${w.rel}/${bare}`);
        const inRepo = tracked(bare);
        if (!inPackage && !inRepo) continue;
        if (inPackage && ships(w, bare)) continue;
        const owner = workspaces.find((x) => bare.startsWith(`${x.rel}/`));
        if (inRepo && owner && ships(owner, bare.slice(owner.rel.length + 1))) continue;
        if (paragraphs.some((p) => /\brepository\b/i.test(p))) continue;
        problems.push(`${w.manifest.name} README.md: ${path} is not in a tarball, and no paragraph naming it says it is in berth's repository`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('an outside file importing every entry point compiles with tsc --strict, without skipLibCheck', async () => {
    const r = await run(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project);
    expect(r.code, show(r)).toBe(0);
  }, 300_000);

  it('every entry point imports at runtime and the installed berth binary runs', async () => {
    // Code entry points (a package.json export is data, read with an import attribute or require).
    const specifiers = workspaces
      .filter((w) => w.manifest.exports)
      .flatMap((w) => Object.keys(w.manifest.exports!).map((k) => posix.join(w.manifest.name, k)))
      .filter((s) => !s.endsWith('.json'));
    expect(specifiers).toContain('@berth/core/backend-kit');
    const script = `for (const s of ${JSON.stringify(specifiers)}) { const m = await import(s); if (Object.keys(m).length === 0) throw new Error(s + ' exports nothing'); }`;
    const imported = await run(process.execPath, ['--input-type=module', '-e', script], project);
    expect(imported.code, show(imported)).toBe(0);
    const bins = await readdir(join(project, 'node_modules/.bin'));
    expect(bins).toContain('berth');
    const help = await run(join(project, 'node_modules/.bin/berth'), ['--help'], project);
    expect(help.code, show(help)).toBe(0);
    expect(help.stdout).toMatch(/Usage: berth/);
    expect(help.stdout).toMatch(/\brun\b/);
  }, 120_000);

  it("the installed berth runs a harbor task on Docker: `berth run` from the outside project, rewarded 1, its version the packages'", async () => {
    const version = await run(join(project, 'node_modules/.bin/berth'), ['--version'], project);
    expect(version.stdout.trim(), show(version)).toBe(workspaces[0]!.manifest.version);
    await cp(join(repo, 'examples/tasks/hello-world'), join(project, 'tasks/hello-world'), { recursive: true });
    const r = await run(join(project, 'node_modules/.bin/berth'), ['run', 'tasks', '--job-dir', 'jobs'], project);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/hello-world +rewarded 1/);
    expect(r.stdout + r.stderr).toMatch(/^valid: yes$/m);
  }, 180_000);

  it("the installed packages' guardian removes a SIGKILLed program's container (Docker)", async () => {
    const tag = `pkg-${process.pid}-${Date.now()}`;
    const script = [
      "import { createDockerBackend } from '@berth/backend-docker';",
      `await createDockerBackend().start({ image: 'berth-test/busybox:latest', network: 'none', labels: { 'berth.test-guardian': '${tag}' } });`,
      "process.stdout.write('ready\\n');",
      'setInterval(() => undefined, 60_000);',
    ].join('\n');
    const containers = async () =>
      (await mustRun('docker', ['ps', '-aq', '--filter', `label=berth.test-guardian=${tag}`], project)).stdout.split('\n').filter(Boolean).length;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, BERTH_GUARDIAN: '1' },
    });
    try {
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.on('exit', () => reject(new Error(`the program ended before its container ran: ${stderr}`)));
      });
      expect(await containers()).toBe(1);
      // The guardian that runs is the installed one, from the outside project's node_modules.
      const installed = join(project, 'node_modules/@berth/core/dist/kit/guardian-main.js');
      expect(await commandLinesOfChildren(child.pid!)).toContainEqual(expect.stringContaining(installed));
      child.kill('SIGKILL');
      let left = 1;
      for (let i = 0; i < 120 && left > 0; i++) {
        await new Promise((r) => setTimeout(r, 250));
        left = await containers();
      }
      expect(left).toBe(0);
    } finally {
      child.kill('SIGKILL');
      const ids = (await run('docker', ['ps', '-aq', '--filter', `label=berth.test-guardian=${tag}`], project)).stdout.split('\n').filter(Boolean);
      if (ids.length > 0) await run('docker', ['rm', '-f', ...ids], project);
    }
  }, 120_000);
});

/** The command lines of `pid`'s children, from /proc (Linux). */
async function commandLinesOfChildren(pid: number): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid)
        lines.push((await readFile(`/proc/${entry}/cmdline`, 'utf8')).replaceAll('\0', ' '));
    } catch {
      // Ended while we looked.
    }
  }
  return lines;
}

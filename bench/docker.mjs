#!/usr/bin/env node
// berth's Docker backend against the standard tools, measured side by side in the same run.
//
//   npm run bench                       (= npm run build && node bench/docker.mjs)
//   BENCH_REPS=1 node bench/docker.mjs  (quick smoke run; see bench/README.md for every knob)
//
// Every berth timing is printed next to the standard tool's timing from this run, with the ratio
// berth / standard (< 1: berth is faster). All containers run with network 'none' and nothing is
// pulled. Everything created here is removed on the way out, failure and Ctrl-C included.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import Docker from 'dockerode';
import { createDockerBackend } from '@berth/backend-docker';
import { LABEL_MANAGED } from '@berth/core';

// ------------------------------------------------------------------------------------ settings

function intFromEnv(name, fallback, min = 1) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** BENCH_REPS sets every repetition count at once; the per-section variables win over it. */
const REPS = process.env.BENCH_REPS ? intFromEnv('BENCH_REPS', 1) : undefined;
const START_REPS = intFromEnv('BENCH_START_REPS', REPS ?? 10);
const EXEC_REPS = intFromEnv('BENCH_EXEC_REPS', REPS ?? 30);
const TRANSFER_REPS = intFromEnv('BENCH_TRANSFER_REPS', REPS ?? 3);
/** Untimed runs of every operation before its timed reps (connection set-up, lazy loading). */
const WARMUP = intFromEnv('BENCH_WARMUP', 1, 0);
const TREE_DIRS = intFromEnv('BENCH_TREE_DIRS', 100);
const TREE_FILES = intFromEnv('BENCH_TREE_FILES', 10_000);
const TREE_FILE_BYTES = intFromEnv('BENCH_TREE_FILE_BYTES', 1024);
const BIG_MIB = intFromEnv('BENCH_BIG_MIB', 200);
/** RSS sampling period during transfers. */
const SAMPLE_MS = intFromEnv('BENCH_SAMPLE_MS', 5);
const IMAGE = process.env.BENCH_IMAGE || 'berth-test/busybox:latest';
/** 'native' (the engine's archive API, the default) or 'exec' (the kit's tar over exec, as Kubernetes and Modal transfer). */
const TRANSFERS = process.env.BENCH_TRANSFERS || 'native';
if (!['native', 'exec'].includes(TRANSFERS)) throw new Error(`BENCH_TRANSFERS must be native or exec, got "${TRANSFERS}"`);

const RUN_ID = `${process.pid}-${Date.now().toString(36)}`;
/** On every container this script makes, whichever way it makes it. The run label drives the final sweep. */
const LABELS = { [LABEL_MANAGED]: 'true', 'berth.bench': '1', 'berth.bench.run': RUN_ID };
const CLI_LABEL_ARGS = Object.entries(LABELS).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
const SPEC = { image: IMAGE, network: 'none', labels: { 'berth.bench': '1', 'berth.bench.run': RUN_ID } };

const MiB = 1024 * 1024;
const BIG_BYTES = BIG_MIB * MiB;

// Expose the GC without re-executing node with --expose-gc: peak-RSS baselines start from a collected heap.
let gc = typeof globalThis.gc === 'function' ? globalThis.gc : undefined;
if (!gc) {
  try {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc');
  } catch {
    gc = undefined;
  }
}

// ------------------------------------------------------------------------------------ helpers

const log = (...args) => console.log(...args);
const ms = (n) => `${n.toFixed(1)} ms`;
const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
/** Nearest-rank p90 (with 3 reps, the slowest one). */
function p90(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(0.9 * s.length) - 1)];
}

/** Peak VmRSS of another process, from /proc (0 if it already exited). */
function procRss(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Run a command (the docker CLI); resolves with its stdout, rejects on a non-zero exit.
 * With sampleRss, polls the child's RSS every SAMPLE_MS ms and returns its peak too.
 */
function run(cmd, args, { sampleRss = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    let peak = 0;
    const timer = sampleRss
      ? setInterval(() => {
          peak = Math.max(peak, procRss(child.pid));
        }, SAMPLE_MS)
      : undefined;
    if (sampleRss) peak = procRss(child.pid);
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', (e) => {
      if (timer) clearInterval(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      if (timer) clearInterval(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      if (code === 0) resolve({ stdout, peakRss: peak });
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`}): ${Buffer.concat(err).toString('utf8').trim()}`));
    });
  });
}

/** Time fn; with sampleSelf, sample this process's RSS every SAMPLE_MS ms and report peak - baseline. */
async function measure(fn, { sampleSelf = false } = {}) {
  let base = 0;
  let peak = 0;
  let timer;
  if (sampleSelf) {
    gc?.();
    gc?.();
    base = process.memoryUsage().rss;
    peak = base;
    timer = setInterval(() => {
      const rss = process.memoryUsage().rss;
      if (rss > peak) peak = rss;
    }, SAMPLE_MS);
  }
  const t0 = performance.now();
  try {
    const value = await fn();
    return { value, ms: performance.now() - t0, rssDelta: Math.max(peak, process.memoryUsage().rss) - base, rssBase: base };
  } finally {
    if (timer) clearInterval(timer);
  }
}

/**
 * Run each named contender `reps` times (after WARMUP untimed runs), rotating which one goes first
 * in every round so that drift (caches warming, the engine's state growing) hits them all alike.
 * Each contender is `(rep, timed) => Promise<{ms, ...}>`; returns the samples per contender.
 */
async function alternate(label, contenders, reps) {
  const names = Object.keys(contenders);
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let w = 0; w < WARMUP; w++) for (const n of names) await contenders[n](-1 - w, false);
  for (let i = 0; i < reps; i++) {
    const order = names.map((_, k) => names[(k + i) % names.length]);
    for (const n of order) {
      // Flush the page cache's dirty pages first (untimed): otherwise whoever runs next pays for
      // the writeback of what the previous contender wrote, and 200 MiB files swing results 2x.
      execFileSync('sync');
      samples[n].push(await contenders[n](i, true));
    }
  }
  log(`  ${label}: ${names.map((n) => `${n} median ${ms(median(samples[n].map((s) => s.ms)))}`).join(', ')}`);
  return samples;
}

// ------------------------------------------------------------------------------------ cleanup

const docker = new Docker();
const backend = createDockerBackend({ pullPolicy: 'never', transfers: TRANSFERS });
const owned = { envs: new Set(), cli: new Set(), dockerode: new Set(), dirs: new Set() };
let cleaning;
let interrupted = false;

function cleanup() {
  cleaning ??= (async () => {
    const problems = [];
    for (const env of owned.envs) await env.teardown().catch((e) => problems.push(`teardown ${env.id}: ${e.message}`));
    for (const name of owned.cli) await run('docker', ['rm', '-f', name]).catch((e) => problems.push(e.message));
    for (const id of owned.dockerode) {
      await docker
        .getContainer(id)
        .remove({ force: true })
        .catch((e) => e.statusCode !== 404 && problems.push(`remove ${id}: ${e.message}`));
    }
    // Safety net: anything labelled with this run's id that slipped through (say, a start cut short).
    try {
      const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=berth.bench.run=${RUN_ID}`]);
      const left = stdout.split('\n').filter(Boolean);
      if (left.length) await run('docker', ['rm', '-f', ...left]);
    } catch (e) {
      problems.push(e.message);
    }
    for (const dir of owned.dirs) await rm(dir, { recursive: true, force: true }).catch((e) => problems.push(e.message));
    for (const p of problems) console.error(`cleanup: ${p}`);
  })();
  return cleaning;
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    interrupted = true;
    console.error(`\n${sig}: cleaning up...`);
    cleanup().finally(() => process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1)));
  });
}

// ------------------------------------------------------------------------------------ fixtures

async function makeTree(dir, files, dirs) {
  const perDir = Math.ceil(files / dirs);
  let made = 0;
  for (let d = 0; d < dirs && made < files; d++) {
    const sub = join(dir, `d${String(d).padStart(3, '0')}`);
    await mkdir(sub, { recursive: true });
    const writes = [];
    for (let f = 0; f < perDir && made < files; f++, made++) {
      writes.push(writeFile(join(sub, `f${String(f).padStart(3, '0')}.bin`), randomBytes(TREE_FILE_BYTES)));
    }
    await Promise.all(writes);
  }
  return made;
}

async function makeBigFile(path, bytes) {
  const out = createWriteStream(path);
  const chunk = MiB;
  for (let written = 0; written < bytes; written += chunk) {
    if (!out.write(randomBytes(Math.min(chunk, bytes - written)))) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((resolve, reject) => out.end((e) => (e ? reject(e) : resolve())));
}

function sha256(path) {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

async function countFiles(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).length;
}

// ------------------------------------------------------------------------------------ benchmark

async function main() {
  const rows = [];
  const memory = [];
  const t0 = performance.now();

  await run('docker', ['image', 'inspect', '--format', '{{.Id}}', IMAGE]).catch(() => {
    throw new Error(`image ${IMAGE} is not present locally; this bench never pulls (build or load it first)`);
  });
  const { stdout: versions } = await run('docker', ['version', '--format', 'client {{.Client.Version}}, engine {{.Server.Version}}']);
  log(`berth Docker bench: run ${RUN_ID}, ${versions.trim()}, node ${process.version}, gc ${gc ? 'exposed' : 'NOT exposed'}`);
  log(`berth transfers: ${TRANSFERS}`);
  log(
    `reps: start ${START_REPS}, exec ${EXEC_REPS}, transfers ${TRANSFER_REPS} (+${WARMUP} untimed warm-up each; transfer warm-ups move the 1/10-size fixtures)`,
  );

  // 1. start + teardown ------------------------------------------------------------------------
  log('\n[1/6] start+teardown');
  let seq = 0;
  const start = await alternate(
    'start+teardown',
    {
      berth: async () =>
        measure(async () => {
          const env = await backend.start(SPEC);
          owned.envs.add(env);
          await env.teardown();
          owned.envs.delete(env);
        }),
      cli: async () => {
        const name = `berth-bench-${RUN_ID}-cli-${seq++}`;
        owned.cli.add(name);
        const r = await measure(async () => {
          await run('docker', ['run', '-d', '--pull', 'never', '--network', 'none', ...CLI_LABEL_ARGS, '--name', name, IMAGE, 'sleep', '3600']);
          await run('docker', ['rm', '-f', name]);
        });
        owned.cli.delete(name);
        return r;
      },
      dockerode: async () =>
        measure(async () => {
          const c = await docker.createContainer({ Image: IMAGE, Cmd: ['sleep', '3600'], Labels: LABELS, HostConfig: { NetworkMode: 'none' } });
          owned.dockerode.add(c.id);
          await c.start();
          await c.remove({ force: true });
          owned.dockerode.delete(c.id);
        }),
    },
    START_REPS,
  );
  rows.push(['start+teardown', start.berth, start.cli, 'docker run -d --network none … sleep 3600 + docker rm -f']);
  rows.push(['start+teardown', start.berth, start.dockerode, 'dockerode createContainer + start + remove({force})']);

  // One environment for the exec and transfer sections; the CLI and dockerode baselines use the same container.
  const work = await backend.start(SPEC);
  owned.envs.add(work);
  const container = docker.getContainer(work.id);
  const sh = async (script) => {
    const r = await work.exec(script);
    if (r.exitCode !== 0) throw new Error(`in-sandbox check failed: ${script}: exit ${r.exitCode} ${r.stderr}`);
    return r.stdout.trim();
  };

  // 2. exec round trip ------------------------------------------------------------------------
  log('\n[2/6] exec round trip');
  const exec = await alternate(
    'exec true',
    {
      berth: async () =>
        measure(async () => {
          const r = await work.exec(['true']);
          if (r.exitCode !== 0) throw new Error(`berth exec true: exit ${r.exitCode}`);
        }),
      cli: async () => measure(() => run('docker', ['exec', work.id, 'true'])),
      dockerode: async () =>
        measure(async () => {
          const ex = await container.exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
          const stream = await ex.start({ hijack: true, stdin: false });
          await new Promise((resolve, reject) => {
            stream.on('end', resolve);
            stream.on('close', resolve);
            stream.on('error', reject);
            stream.resume();
          });
          const info = await ex.inspect();
          if (!info.Running && info.ExitCode !== 0) throw new Error(`dockerode exec true: exit ${info.ExitCode}`);
        }),
    },
    EXEC_REPS,
  );
  rows.push(['exec true', exec.berth, exec.cli, 'docker exec <c> true']);
  rows.push(['exec true', exec.berth, exec.dockerode, 'dockerode exec create + start + stream end + inspect']);

  // Fixtures, made once: the full-size ones, and 1/10-size ones for the warm-ups and the
  // memory-scaling check (does berth's peak RSS follow the size of what it moves?).
  const tmp = await mkdtemp(join(tmpdir(), 'berth-bench-'));
  owned.dirs.add(tmp);
  const out = join(tmp, 'out');
  await mkdir(out);
  const t = performance.now();
  const tree = { path: join(tmp, 'tree'), remote: '/src/tree' };
  tree.files = await makeTree(tree.path, TREE_FILES, TREE_DIRS);
  const smallTree = { path: join(tmp, 'small-tree'), remote: '/src/small-tree' };
  smallTree.files = await makeTree(smallTree.path, Math.max(1, Math.round(TREE_FILES / 10)), Math.max(1, Math.round(TREE_DIRS / 10)));
  const big = { path: join(tmp, 'big.bin'), remote: '/src/big.bin', bytes: BIG_BYTES };
  const smallBig = { path: join(tmp, 'small.bin'), remote: '/src/small.bin', bytes: Math.max(1, Math.round(BIG_BYTES / 10)) };
  for (const f of [big, smallBig]) {
    await makeBigFile(f.path, f.bytes);
    f.hash = await sha256(f.path);
  }
  const treeName = (f) => `${f.files.toLocaleString('en-US')} × ${TREE_FILE_BYTES} B files`;
  const fileName = (f) => `${+(f.bytes / MiB).toFixed(1)} MiB file`;
  log(
    `\nfixtures in ${tmp}: ${treeName(tree)} in ${TREE_DIRS} dirs, one ${fileName(big)}; 1/10-size copies for warm-ups and scaling (${ms(performance.now() - t)})`,
  );
  await sh('mkdir -p /up /src');

  const tag = (i) => (i < 0 ? `w${-i}` : String(i));
  // After checking an upload, the first copy of each fixture stays in the sandbox (renamed into
  // /src) as the source of the downloads; the others are deleted.
  const settleRemote = async (dst, keepAs) => {
    if ((await sh(`[ -e ${keepAs} ] && echo yes || echo no`)) === 'no') await sh(`mv ${dst} ${keepAs}`);
    else await sh(`rm -rf ${dst}`);
  };
  const remoteTree = async (dst, f) => {
    const n = Number(await sh(`find ${dst} -type f | wc -l`));
    if (n !== f.files) throw new Error(`${dst}: expected ${f.files} files in the sandbox, found ${n}`);
    await settleRemote(dst, f.remote);
  };
  const remoteFile = async (dst, f) => {
    const n = Number(await sh(`wc -c < ${dst}`));
    if (n !== f.bytes) throw new Error(`${dst}: expected ${f.bytes} bytes in the sandbox, found ${n}`);
    await settleRemote(dst, f.remote);
  };
  const localTree = async (dir, f) => {
    const n = await countFiles(dir);
    if (n !== f.files) throw new Error(`${dir}: expected ${f.files} files, found ${n}`);
    await rm(dir, { recursive: true, force: true });
  };
  const localFile = async (path, f, i) => {
    const { size } = await stat(path);
    if (size !== f.bytes) throw new Error(`${path}: expected ${f.bytes} bytes, found ${size}`);
    // Content check on the first timed rep only (hashing 200 MiB every rep would just slow the bench).
    if (i === 0 && (await sha256(path)) !== f.hash) throw new Error(`${path}: content differs from the source`);
    await rm(path, { force: true });
  };
  const checkStats = (what, stats, f) => {
    if (stats.files !== f.files) throw new Error(`berth ${what} reported ${stats.files} files, expected ${f.files}`);
  };
  // Warm-ups move the 1/10-size fixtures: they warm connections and code paths without costing
  // a full-size transfer each.
  const pick = (i, full, small) => (i < 0 ? small : full);
  const viaCli = async (args) => {
    const r = await measure(() => run('docker', args, { sampleRss: true }));
    return { ...r, childRss: r.value.peakRss };
  };

  // Memory scaling: before each full-size comparison, berth alone moves the 1/10-size fixture
  // TRANSFER_REPS times with RSS sampled. Done first, so the small transfer does not start from
  // memory the full-size one already made the process reserve (which would hide its own use).
  const scale = {};
  const scaleReps = async (key, fn) => {
    scale[key] = [];
    for (let i = 0; i < TRANSFER_REPS; i++) scale[key].push(await fn(i));
  };

  // 3. uploadDir ------------------------------------------------------------------------------
  log('\n[3/6] uploadDir');
  await scaleReps('upDir', async (i) => {
    const r = await measure(() => work.uploadDir(smallTree.path, `/up/scale-${i}`), { sampleSelf: true });
    checkStats('uploadDir', r.value, smallTree);
    await remoteTree(`/up/scale-${i}`, smallTree);
    return r;
  });
  const upDir = await alternate(
    `uploadDir ${treeName(tree)}`,
    {
      berth: async (i) => {
        const f = pick(i, tree, smallTree);
        const dst = `/up/berth-${tag(i)}`;
        const r = await measure(() => work.uploadDir(f.path, dst), { sampleSelf: true });
        checkStats('uploadDir', r.value, f);
        await remoteTree(dst, f);
        return r;
      },
      cli: async (i) => {
        const f = pick(i, tree, smallTree);
        const dst = `/up/cli-${tag(i)}`;
        const r = await viaCli(['cp', f.path, `${work.id}:${dst}`]);
        await remoteTree(dst, f);
        return r;
      },
    },
    TRANSFER_REPS,
  );
  rows.push([`uploadDir ${treeName(tree)}`, upDir.berth, upDir.cli, 'docker cp <dir> <c>:/dst']);

  // 4. uploadFile -----------------------------------------------------------------------------
  log('\n[4/6] uploadFile');
  await scaleReps('upFile', async (i) => {
    const r = await measure(() => work.uploadFile(smallBig.path, `/up/scale-${i}.bin`), { sampleSelf: true });
    await remoteFile(`/up/scale-${i}.bin`, smallBig);
    return r;
  });
  const upFile = await alternate(
    `uploadFile ${fileName(big)}`,
    {
      berth: async (i) => {
        const f = pick(i, big, smallBig);
        const dst = `/up/big-berth-${tag(i)}.bin`;
        const r = await measure(() => work.uploadFile(f.path, dst), { sampleSelf: true });
        await remoteFile(dst, f);
        return r;
      },
      cli: async (i) => {
        const f = pick(i, big, smallBig);
        const dst = `/up/big-cli-${tag(i)}.bin`;
        const r = await viaCli(['cp', f.path, `${work.id}:${dst}`]);
        await remoteFile(dst, f);
        return r;
      },
    },
    TRANSFER_REPS,
  );
  rows.push([`uploadFile ${fileName(big)}`, upFile.berth, upFile.cli, 'docker cp <file> <c>:/dst']);

  // 5. downloadDir ----------------------------------------------------------------------------
  log('\n[5/6] downloadDir');
  await scaleReps('downDir', async (i) => {
    const d = join(out, `scale-${i}`);
    const r = await measure(() => work.downloadDir(smallTree.remote, d), { sampleSelf: true });
    checkStats('downloadDir', r.value, smallTree);
    await localTree(d, smallTree);
    return r;
  });
  const downDir = await alternate(
    `downloadDir ${treeName(tree)}`,
    {
      berth: async (i) => {
        const f = pick(i, tree, smallTree);
        const dst = join(out, `tree-berth-${tag(i)}`);
        const r = await measure(() => work.downloadDir(f.remote, dst), { sampleSelf: true });
        checkStats('downloadDir', r.value, f);
        await localTree(dst, f);
        return r;
      },
      cli: async (i) => {
        const f = pick(i, tree, smallTree);
        const dst = join(out, `tree-cli-${tag(i)}`);
        const r = await viaCli(['cp', `${work.id}:${f.remote}`, dst]);
        await localTree(dst, f);
        return r;
      },
    },
    TRANSFER_REPS,
  );
  rows.push([`downloadDir ${treeName(tree)}`, downDir.berth, downDir.cli, 'docker cp <c>:/dir <dir>']);

  // 6. downloadFile ---------------------------------------------------------------------------
  log('\n[6/6] downloadFile');
  await scaleReps('downFile', async (i) => {
    const d = join(out, `scale-${i}.bin`);
    const r = await measure(() => work.downloadFile(smallBig.remote, d), { sampleSelf: true });
    await localFile(d, smallBig, i);
    return r;
  });
  const downFile = await alternate(
    `downloadFile ${fileName(big)}`,
    {
      berth: async (i) => {
        const f = pick(i, big, smallBig);
        const dst = join(out, `big-berth-${tag(i)}.bin`);
        const r = await measure(() => work.downloadFile(f.remote, dst), { sampleSelf: true });
        await localFile(dst, f, i);
        return r;
      },
      cli: async (i) => {
        const f = pick(i, big, smallBig);
        const dst = join(out, `big-cli-${tag(i)}.bin`);
        const r = await viaCli(['cp', `${work.id}:${f.remote}`, dst]);
        await localFile(dst, f, i);
        return r;
      },
    },
    TRANSFER_REPS,
  );
  rows.push([`downloadFile ${fileName(big)}`, downFile.berth, downFile.cli, 'docker cp <c>:/file <file>']);

  const treeMiB = (f) => mib(f.files * TREE_FILE_BYTES);
  memory.push([`uploadDir ${treeName(tree)}`, treeMiB(tree), upDir, scale.upDir, `${smallTree.files.toLocaleString('en-US')} files`]);
  memory.push([`uploadFile ${fileName(big)}`, mib(big.bytes), upFile, scale.upFile, fileName(smallBig)]);
  memory.push([`downloadDir ${treeName(tree)}`, treeMiB(tree), downDir, scale.downDir, `${smallTree.files.toLocaleString('en-US')} files`]);
  memory.push([`downloadFile ${fileName(big)}`, mib(big.bytes), downFile, scale.downFile, fileName(smallBig)]);

  await work.teardown();
  owned.envs.delete(work);

  // Report ------------------------------------------------------------------------------------
  const head = ['operation', 'reps', 'berth median', 'berth p90', 'standard median', 'standard p90', 'ratio', '(standard)'];
  const table = rows.map(([op, b, s, what]) => {
    const bm = median(b.map((x) => x.ms));
    const sm = median(s.map((x) => x.ms));
    return [op, String(b.length), ms(bm), ms(p90(b.map((x) => x.ms))), ms(sm), ms(p90(s.map((x) => x.ms))), (bm / sm).toFixed(2), what];
  });
  const widths = head.map((h, c) => Math.max(h.length, ...table.map((r) => r[c].length)));
  const line = (r) =>
    r
      .map((cell, c) => (c === 0 || c === r.length - 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join('   ')
      .trimEnd();
  log(`\n${'='.repeat(100)}`);
  log('ratio = berth median / standard median  (< 1: berth is faster)');
  log(line(head));
  for (const r of table) log(line(r));
  const slow = table.filter((r) => Number(r[6]) > 2);
  if (slow.length) log(`\nslower than the standard tool by more than 2x: ${slow.map((r) => `${r[0]} vs ${r[7]} (${r[6]}x)`).join('; ')}`);

  log(`\npeak RSS of berth's own process above its baseline while the operation ran (sampled every ${SAMPLE_MS} ms,`);
  log(
    `max over ${TRANSFER_REPS} reps${gc ? ', baseline taken after gc()' : ', gc NOT exposed: baselines include uncollected garbage'}); streaming means it stays flat as the data grows 10x.`,
  );
  log('Next to it: the peak RSS of the whole docker CLI process doing the same copy (a separate Go process, absolute).');
  const memHead = ['operation', 'data', 'berth peak ΔRSS', 'at 1/10 size', '', 'docker cp peak RSS'];
  const memRows = memory.map(([op, data, full, small, smallName]) => [
    op,
    data,
    `+${mib(Math.max(...full.berth.map((x) => x.rssDelta)))}`,
    `+${mib(Math.max(...small.map((x) => x.rssDelta)))}`,
    `(${smallName})`,
    mib(Math.max(...full.cli.map((x) => x.childRss))),
  ]);
  const memWidths = memHead.map((h, c) => Math.max(h.length, ...memRows.map((r) => r[c].length)));
  const memLine = (r) =>
    r
      .map((cell, c) => (c === 0 || c === 4 ? cell.padEnd(memWidths[c]) : cell.padStart(memWidths[c])))
      .join('   ')
      .trimEnd();
  log(memLine(memHead));
  for (const r of memRows) log(memLine(r));
  log(`\ntotal bench time ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  // After a signal, the failure is only the cleanup pulling containers from under the bench.
  if (!interrupted) console.error(`\nbench failed: ${error?.stack ?? error}`);
} finally {
  await cleanup();
  const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=berth.bench.run=${RUN_ID}`]).catch(() => ({ stdout: '?' }));
  const left = stdout.split('\n').filter(Boolean).length;
  log(`cleanup: ${left} container(s) of this run left, temp dirs removed`);
  if (left) failed = true;
}
process.exitCode = failed ? 1 : 0;

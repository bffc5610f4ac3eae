// opts.user through the kit's user launcher, for engines whose exec has no user (Kubernetes, Modal).
// The "sandbox" is this machine (real child processes, as root), each command in a mount namespace
// of its own where /etc/passwd and /etc/group are the test's files, and PATH holds only the tools a
// test gives it: every switching tool is run for real, one at a time.
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capabilities } from '../src/contract.js';
import { CapabilityError, ConfigError } from '../src/errors.js';
import { SandboxEnvironment } from '../src/kit/environment.js';
import type { ProcessRequest, SandboxProcess } from '../src/kit/transport.js';
import { parseEnvironmentSpec } from '../src/spec.js';
import { LocalTransport } from './support/local-transport.js';

const PASSWD = ['root:x:0:0:root:/root:/bin/sh', 'app:x:1500:1600:app:/home/app:/bin/sh', 'nohome:x:1501:1600::', ''].join('\n');
// The last line has no newline: the launcher must read it too.
const GROUP = ['root:x:0:', 'appg:x:1600:', 'extra:x:1700:other,app', 'more:x:1800:app'].join('\n');
// util-linux su asks PAM, whose account check wants the user in /etc/shadow.
const SHADOW = ['root:*:19000:0:99999:7:::', 'app:!:19000:0:99999:7:::', ''].join('\n');

let root: string;
let etc: { passwd: string; group: string; shadow: string };
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-kit-user-'));
  // The users the commands run as must reach the tools.
  await chmod(root, 0o755);
  etc = { passwd: join(root, 'passwd'), group: join(root, 'group'), shadow: join(root, 'shadow') };
  await writeFile(etc.passwd, PASSWD);
  await writeFile(etc.group, GROUP);
  await writeFile(etc.shadow, SHADOW, { mode: 0o640 });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A directory for PATH holding only `tools` (name -> program), plus what every command here needs. */
async function toolDir(name: string, tools: Record<string, string>): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir);
  const base = { sh: '/bin/sh', id: '/usr/bin/id', cat: '/bin/cat', sleep: '/bin/sleep', pwd: '/bin/pwd' };
  for (const [tool, target] of Object.entries({ ...base, ...tools })) await symlink(target, join(dir, tool));
  return dir;
}

/** LocalTransport with the test's /etc files bind-mounted in a private mount namespace, and the spec's env applied as a backend would. */
class EtcTransport extends LocalTransport {
  specEnv: Record<string, string> = {};
  override spawn(request: ProcessRequest): Promise<SandboxProcess> {
    const mounts = 'for f in passwd group shadow; do /bin/mount --bind "$1" /etc/$f || exit 1; shift; done; exec "$@"';
    const files = [etc.passwd, etc.group, etc.shadow];
    const argv = ['/usr/bin/unshare', '--mount', '--propagation', 'private', '/bin/sh', '-c', mounts, 'berth-etc', ...files, ...request.argv];
    return super.spawn({ ...request, argv, env: { ...this.specEnv, ...request.env } });
  }
}

async function started(path: string | undefined, capabilities: Partial<Capabilities> = { execUser: true }, env: Record<string, string> = {}) {
  const transport = new EtcTransport(path ? { path } : {});
  transport.specEnv = env;
  const environment = new SandboxEnvironment({
    backend: 'local',
    id: `local-${Math.random().toString(16).slice(2, 8)}`,
    spec: parseEnvironmentSpec({ image: 'local:latest', env }),
    transport,
    transfers: 'exec',
    capabilities,
  });
  await environment.start();
  return { env: environment, transport };
}

const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

/** Running or sleeping; a zombie waiting for its reaper is dead. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const WHO = ['sh', '-c', 'echo "$(id -u) $(id -g) [$(id -G)] $HOME"'];

describe('kit: opts.user through the launcher', () => {
  it.each([
    ['setpriv (util-linux)', { setpriv: '/usr/bin/setpriv' }, '1600 1700 1800'],
    ['chroot --userspec (coreutils)', { chroot: '/usr/sbin/chroot' }, '1600 1700 1800'],
    // nsenter cannot set supplementary groups: only the primary one.
    ['nsenter (util-linux)', { nsenter: '/usr/bin/nsenter' }, '1600'],
    ['nsenter (busybox)', { nsenter: '/bin/busybox' }, '1600'],
    ['su (util-linux)', { su: '/bin/su' }, '1600 1700 1800'],
    ['su (busybox)', { su: '/bin/busybox' }, '1600 1700 1800'],
  ])('with only %s: a named user gets its uid, group, supplementary groups and home', async (name, tools, groups) => {
    const { env, transport } = await started(await toolDir(name.replace(/\W+/g, '-'), tools));
    const r = await env.exec(WHO, { user: 'app' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`1500 1600 [${groups}] /home/app\n`);
    // The engine never saw a user: the launcher did the switching.
    expect(transport.spawned.every((s) => s.user === undefined)).toBe(true);
  });

  it.each([
    ['setpriv', { setpriv: '/usr/bin/setpriv' }],
    ['chroot', { chroot: '/usr/sbin/chroot' }],
    ['busybox nsenter', { nsenter: '/bin/busybox' }],
  ])('with only %s: a uid:gid absent from /etc/passwd works, HOME is / and the cwd is kept', async (name, tools) => {
    const { env } = await started(await toolDir(`numeric-${name.replace(/\W+/g, '-')}`, tools));
    expect((await env.exec(WHO, { user: '1234:2345' })).stdout).toBe('1234 2345 [2345] /\n');
    // A uid alone: group 0, as Docker gives it.
    expect((await env.exec(['id', '-g'], { user: '1234' })).stdout).toBe('0\n');
    expect((await env.exec(['pwd'], { user: '1234', cwd: '/tmp' })).stdout).toBe('/tmp\n');
    // A group by name; the user's uid by number resolves its passwd entry (home).
    expect((await env.exec(WHO, { user: '1500:extra' })).stdout).toBe('1500 1700 [1700] /home/app\n');
  });

  it("HOME is the caller's when the spec or the exec sets it; a user without a home gets /", async () => {
    const { env } = await started(await toolDir('home', { setpriv: '/usr/bin/setpriv' }), { execUser: true }, { HOME: '/from-spec' });
    expect((await env.exec('echo $HOME', { user: 'app' })).stdout).toBe('/from-spec\n');
    expect((await env.exec('echo $HOME', { user: 'app', env: { HOME: '/from-exec' } })).stdout).toBe('/from-exec\n');
    const plain = await started(await toolDir('home-plain', { setpriv: '/usr/bin/setpriv' }));
    expect((await plain.env.exec('echo $HOME', { user: 'nohome' })).stdout).toBe('/\n');
  });

  it('an unknown user or group is a ConfigError on opts.user, as on Docker; nothing of the command runs', async () => {
    const { env } = await started(await toolDir('unknown', { setpriv: '/usr/bin/setpriv' }));
    // The command leaves a file where any user may write: the same command as a known user shows it would.
    const out = join(root, 'unknown-out');
    await mkdir(out);
    await chmod(out, 0o777);
    const ran = (name: string) => ['sh', '-c', 'echo ran > "$1"', 'sh', join(out, name)];
    expect((await env.exec(ran('app'), { user: 'app' })).exitCode).toBe(0);
    expect(await readFile(join(out, 'app'), 'utf8')).toBe('ran\n');
    for (const [user, what] of [
      ['berth-no-such-user', 'unable to find user berth-no-such-user'],
      ['app:berth-no-group', 'unable to find group berth-no-group'],
    ] as const) {
      const error = await failure(env.exec(ran(user), { user }));
      expect(ConfigError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({ path: 'opts.user', operation: 'exec' });
      expect((error as Error).message).toContain(`cannot run as user "${user}"`);
      expect((error as Error).message).toContain(what);
    }
    expect(await readdir(out), 'files the refused commands left').toEqual(['app']);
  });

  it('an image with no tool that can switch users: a ConfigError naming what was looked for and what to install', async () => {
    // busybox's setpriv has no --reuid and its chroot no --userspec: found, probed, not usable.
    const { env } = await started(await toolDir('none', { setpriv: '/bin/busybox', chroot: '/bin/busybox' }));
    const error = await failure(env.exec(['id'], { user: '1234:2345' }));
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('opts.user');
    const message = (error as Error).message;
    expect(message).toContain('cannot run as user 1234:2345: found setpriv chroot, but none switched to uid 1234 gid 2345 here');
    expect(message).toContain('looked for: setpriv (util-linux), chroot --userspec (coreutils), nsenter -S/-G (util-linux, busybox), su-exec, gosu');
    expect(message).toContain('apt-get install util-linux');
    const bare = await started(await toolDir('bare', {}));
    const none = await failure(bare.env.exec(['id'], { user: 'app' }));
    expect((none as Error).message).toContain('the image has none of the tools berth looks for');
    // Already that user: no tool is needed.
    expect((await bare.env.exec(['id', '-u'], { user: '0' })).stdout).toBe('0\n');
    expect((await bare.env.exec(['id', '-u'], { user: 'root:0' })).stdout).toBe('0\n');
  });

  it('as a user, stdin flows, exit codes are data, and a timeout kills the whole tree', async () => {
    const { env } = await started(await toolDir('tree', { setpriv: '/usr/bin/setpriv' }));
    const r = await env.exec(['sh', '-c', 'cat; exit 7'], { user: '1234', stdin: 'typed\n' });
    expect(r).toMatchObject({ exitCode: 7, stdout: 'typed\n' });
    // Each sleeper says its pid once it runs; it is seen alive then, before the timeout fires.
    const pids: number[] = [];
    const seenAlive: boolean[] = [];
    const slow = await env.exec('sleep 77311 >/dev/null 2>&1 & echo $!; sleep 77312 >/dev/null 2>&1 & echo $!; wait', {
      user: '1234',
      timeoutMs: 1_500,
      onStdout: (chunk) => {
        for (const pid of Buffer.from(chunk).toString().trim().split('\n').map(Number)) {
          pids.push(pid);
          seenAlive.push(alive(pid));
        }
      },
    });
    try {
      expect(slow.timedOut).toBe(true);
      expect(seenAlive, `the sleepers ${pids.join(', ')} while the command ran`).toEqual([true, true]);
      for (const pid of pids) expect(alive(pid), `sleeper ${pid} once the timeout returned`).toBe(false);
    } finally {
      // Should the tree killer miss them, they must not outlive the test (their output goes nowhere, so the exec did return).
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('a backend without the execUser capability refuses opts.user (root aside) before anything runs', async () => {
    const { env, transport } = await started(undefined, {});
    const error = await failure(env.exec('true', { user: 'app' }));
    expect(CapabilityError.isInstance(error) && error.capability).toBe('exec.user');
    expect(transport.spawned).toEqual([]);
    expect((await env.exec(['id', '-u'], { user: '0' })).stdout).toBe('0\n');
  });

  it('a transport with a native user gets the user in its request and the command unwrapped', async () => {
    const transport = Object.assign(new LocalTransport(), { nativeUser: true });
    const env = new SandboxEnvironment({
      backend: 'local',
      id: 'local-native',
      spec: parseEnvironmentSpec({ image: 'local:latest' }),
      transport,
      capabilities: { execUser: true },
    });
    await env.start();
    await env.exec(['true'], { user: '1234:2345' });
    const request = transport.spawned.at(-1);
    expect(request?.user).toBe('1234:2345');
    expect(request?.argv).not.toContain('berth-user');
  });
});

// berth serve's protocol against the real Docker engine: the calls harbor's plugin makes, their
// errors as data the client can act on, cancellation that kills the command, and nothing left
// when the client goes away.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcess, type RpcClient } from './support/rpc-client.js';

const IMAGE = 'berth-test/busybox:latest';
const SPEC = { image: IMAGE, network: 'none' };
const servers: Array<{ client: RpcClient; served: Promise<void> }> = [];
afterEach(async () => {
  // Ending the input tears down what the test left; serve() returns once that is done.
  for (const s of servers.splice(0)) {
    s.client.end();
    await s.served;
  }
});

function open(): RpcClient {
  const server = inProcess();
  servers.push(server);
  return server.client;
}

async function containers(id: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)('docker', ['ps', '-a', '--filter', `name=^${id}$`, '--format', '{{.Names}}']);
  return stdout.split('\n').filter(Boolean);
}

async function ready(): Promise<RpcClient> {
  const client = open();
  await client.ok('initialize', { protocol: 1, backend: 'docker' });
  return client;
}

describe('berth serve (JSON-RPC over streams)', () => {
  it('initialize says the backend and its capabilities; a client of another protocol or an unknown method is refused with the reason', async () => {
    const client = open();
    const early = await client.call('start', { spec: SPEC });
    expect(early.error?.message).toMatch(/call initialize first/);
    const other = await client.call('initialize', { protocol: 99, backend: 'docker' });
    expect([other.error?.code, other.error?.data?.error.details?.path]).toEqual([-32602, 'params.protocol']);
    const init = await client.ok('initialize', { protocol: 1, backend: 'docker', client: 'test' });
    expect(init).toMatchObject({ protocol: 1, backend: 'docker', capabilities: { networkModes: ['public', 'none'] } });
    const again = await client.call('initialize', { protocol: 1, backend: 'docker' });
    expect(again.error?.message).toMatch(/already called/);
    const unknown = await client.call('execute', {});
    expect(unknown.error?.code).toBe(-32601);
    client.send('{not json');
    const still = await client.call('preflight', {});
    expect(still.result).toMatchObject({ ok: true });
  });

  it('exec: exit codes and output are data; with stream, output arrives as notifications before the answer; a timeout is timedOut', async () => {
    const client = await ready();
    const { id } = (await client.ok('start', { spec: SPEC })) as { id: string };
    const ran = await client.ok('exec', { id, argv: ['sh', '-c', 'echo one; echo two >&2; exit 3'], stream: true, env: { A: 'b' } });
    expect(ran).toMatchObject({ exitCode: 3, stdout: 'one\n', stderr: 'two\n', timedOut: false });
    const streamed = client.notifications.filter((n) => n.method === 'output').map((n) => [n.params.stream, n.params.data]);
    expect(streamed).toEqual(
      expect.arrayContaining([
        ['stdout', 'one\n'],
        ['stderr', 'two\n'],
      ]),
    );
    expect((await client.ok('exec', { id, argv: ['sh', '-c', 'echo $A; pwd'], env: { A: 'b' }, cwd: '/tmp' })).stdout).toBe('b\n/tmp\n');
    const slow = await client.ok('exec', { id, argv: ['sleep', '30'], timeoutMs: 300 });
    expect(slow).toMatchObject({ timedOut: true });
    expect(await client.ok('teardown', { id })).toEqual({ removed: true });
    expect(await client.ok('teardown', { id })).toEqual({ removed: false });
    expect(await containers(id)).toEqual([]);
  });

  it('files move by path on this machine: upload and download, file and directory', async () => {
    const client = await ready();
    const dir = mkdtempSync(join(tmpdir(), 'berth-serve-'));
    writeFileSync(join(dir, 'a.txt'), 'alpha');
    const { id } = (await client.ok('start', { spec: SPEC })) as { id: string };
    await client.ok('uploadFile', { id, from: join(dir, 'a.txt'), to: '/work/a.txt' });
    expect(await client.ok('uploadDir', { id, from: dir, to: '/work/copy' })).toMatchObject({ files: 1 });
    await client.ok('downloadFile', { id, from: '/work/a.txt', to: join(dir, 'back.txt') });
    expect(readFileSync(join(dir, 'back.txt'), 'utf8')).toBe('alpha');
    expect(await client.ok('downloadDir', { id, from: '/work/copy', to: join(dir, 'tree') })).toMatchObject({ files: 1 });
    expect(readFileSync(join(dir, 'tree', 'a.txt'), 'utf8')).toBe('alpha');
    const missing = await client.call('downloadFile', { id, from: '/nope', to: join(dir, 'x') });
    expect(missing.error?.data?.error.type).toBeTruthy();
  });

  it('$/cancel ends the call with CancelledError and kills the command: the sleeper is seen running first, then gone', async () => {
    const client = await ready();
    const { id } = (await client.ok('start', { spec: SPEC })) as { id: string };
    const sleepers = async () => (await client.ok('exec', { id, argv: ['sh', '-c', 'ps -o args | grep -c "^sleep 4242" || true'] })).stdout;
    const callId = client.nextId;
    const running = client.call('exec', { id, argv: ['sh', '-c', 'echo started; sleep 4242'], stream: true });
    for (let i = 0; i < 100 && !client.notifications.some((n) => n.params.call === callId); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await sleepers()).toBe('1\n');
    client.cancel(callId);
    const answer = await running;
    expect([answer.error?.data?.error.type, answer.error?.data?.classification.category]).toEqual(['CancelledError', 'cancelled']);
    expect(await sleepers()).toBe('0\n');
  });

  it('bad params are refused before anything runs, naming the param', async () => {
    const client = await ready();
    const bad = await client.call('exec', { id: 'x', argv: 'echo hi' });
    expect([bad.error?.code, bad.error?.data?.error.details?.path]).toEqual([-32602, 'params.argv']);
    const extra = await client.call('start', { spec: SPEC, image: IMAGE });
    expect(extra.error?.data?.error.details?.path).toBe('params.image');
    const spec = await client.call('start', { spec: { image: IMAGE, network: 'sideways' } });
    expect(spec.error?.data?.error.type).toBe('ConfigError');
    const gone = await client.call('exec', { id: 'berth-000000000000', argv: ['true'] });
    expect(gone.error?.message).toMatch(/no sandbox berth-000000000000/);
  });

  it('when the input ends, every sandbox is torn down and serve() returns', async () => {
    const { client, served } = inProcess();
    await client.ok('initialize', { protocol: 1, backend: 'docker' });
    const a = (await client.ok('start', { spec: SPEC })) as { id: string };
    const b = (await client.ok('start', { spec: SPEC })) as { id: string };
    expect([...(await containers(a.id)), ...(await containers(b.id))]).toHaveLength(2);
    client.end();
    await served;
    expect([...(await containers(a.id)), ...(await containers(b.id))]).toEqual([]);
  });

  it('pool: a start claims a warm sandbox, made ready by prepare while it waited', async () => {
    const client = open();
    await client.ok('initialize', { protocol: 1, backend: 'docker', pool: 1, prepare: ['sh', '-c', 'mkdir -p /ready && id -u > /ready/by'] });
    const first = (await client.ok('start', { spec: SPEC })) as { id: string };
    await client.ok('teardown', { id: first.id });
    // The pool refills behind the claim; the next start finds one idle.
    let second: { id: string; startMs: number } | undefined;
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      second = (await client.ok('start', { spec: SPEC })) as { id: string; startMs: number };
      if (second.startMs < 50) break;
      await client.ok('teardown', { id: second.id });
    }
    expect(second?.startMs).toBeLessThan(50);
    expect((await client.ok('exec', { id: second!.id, argv: ['cat', '/ready/by'] })).stdout).toBe('0\n');
    const lonely = await open().call('initialize', { protocol: 1, backend: 'docker', prepare: ['true'] });
    expect(lonely.error?.data?.error.details?.path).toBe('params.prepare');
    const bad = await client.call('initialize', { protocol: 1, backend: 'docker', pool: -1 });
    expect(bad.error).toBeDefined();
  });
});

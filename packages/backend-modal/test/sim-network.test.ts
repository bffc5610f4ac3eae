// The simulator's TaskSetNetworkAccess, driven by a raw gRPC client: a task made with an allowlist
// policy is switched between an empty allowlist and an allow-all one, and its container really
// loses and regains the engine's bridge (a listener on the bridge's gateway, this machine, is the
// proof; nothing leaves this machine). Requests are validated as Modal's router does. Domains are
// matched on TLS server names at port 443: real ClientHellos (made by Node's TLS client) sent from
// inside to a listener on port 443 of another of this machine's addresses. Needs the Docker engine, berth-test/busybox:latest
// and berth-test/egress:latest (test/setup/egress-image.sh).
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientHello, listenForTokens } from '@berth/conformance';
import type { ReachableListener } from '@berth/conformance';
import { bridgeGateway, secondHostAddress } from '@berth/test-support/docker-bridge';
import { Harness } from '@berth/test-support/modal-sim/harness';
import { Code, ModalSimulator, SIM_LABEL } from '@berth/test-support/modal-sim';

const BUSYBOX = 'berth-test/busybox:latest';
const EMPTY = { network_access_type: 'ALLOWLIST', allowed_cidrs: [], allowed_domains: [] };
const ALLOW_ALL = { network_access_type: 'ALLOWLIST', allowed_cidrs: ['0.0.0.0/0'], allowed_domains: ['*'] };

let sim: ModalSimulator;
let h: Harness;
let appId: string;
let imageId: string;
let listener: ReachableListener;
let tls: TlsListener;

beforeAll(async () => {
  sim = await ModalSimulator.start({ longPollMs: 2000 });
  h = new Harness(sim);
  appId = await h.app('berth-sim-network');
  imageId = (await h.build(appId, [`FROM ${BUSYBOX}`])).imageId;
  listener = await listenForTokens(await bridgeGateway());
  // Not the gateway's port 443: the Modal conformance files take turns on that one.
  tls = await tlsListener(await secondHostAddress());
});

afterAll(async () => {
  await listener?.close();
  await tls?.close();
  h?.close();
  await sim?.close();
});

async function running(networkAccess: object, extra: object = {}) {
  const sandboxId = await h.sandbox(appId, imageId, { network_access: networkAccess, ...extra });
  const taskId = await h.taskId(sandboxId);
  return { sandboxId, taskId, jwt: await h.jwt(taskId) };
}

async function run(task: { taskId: string; jwt: string }, script: string): Promise<{ code: unknown; stdout: string }> {
  const execId = await h.exec(task.taskId, task.jwt, ['sh', '-c', script]);
  const exit = await h.waitExec(task.taskId, task.jwt, execId);
  return { code: exit.code, stdout: (await h.read(task.taskId, task.jwt, execId)).data.toString() };
}

/** A fresh token sent from inside the task to the listener: true when the listener got it. */
async function reaches(task: { taskId: string; jwt: string }): Promise<boolean> {
  const token = `sim-${randomBytes(6).toString('hex')}`;
  const r = await run(task, `printf %s ${token} | nc -w 3 ${listener.host} ${listener.port}`);
  expect(r.code === 0).toBe(listener.received(token));
  return listener.received(token);
}

const interfaces = async (task: { taskId: string; jwt: string }) =>
  (await run(task, 'cat /proc/net/dev')).stdout
    .split('\n')
    .slice(2)
    .map((l) => l.split(':')[0]?.trim())
    .filter(Boolean);

const setAccess = (task: { taskId: string; jwt: string }, networkAccess?: object) =>
  h.router('TaskSetNetworkAccess', { task_id: task.taskId, ...(networkAccess ? { network_access: networkAccess } : {}) }, task.jwt);

describe('TaskSetNetworkAccess', () => {
  it('switches a task made with an empty allowlist to allow-all and back: the container gains and loses the bridge', async () => {
    const task = await running(EMPTY);
    expect(await interfaces(task)).toEqual(['lo']);
    expect(await reaches(task)).toBe(false);

    expect(await h.routerOk('TaskSetNetworkAccess', { task_id: task.taskId, network_access: ALLOW_ALL }, task.jwt)).toEqual({});
    expect((await interfaces(task)).length).toBeGreaterThan(1);
    expect(await reaches(task)).toBe(true);
    // The same policy again changes nothing.
    expect((await setAccess(task, ALLOW_ALL)).code).toBe(0);
    expect(await reaches(task)).toBe(true);

    expect((await setAccess(task, EMPTY)).code).toBe(0);
    expect(await interfaces(task)).toEqual(['lo']);
    expect(await reaches(task)).toBe(false);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it('a task made with an allow-all allowlist starts on the bridge and can be cut off', async () => {
    const task = await running(ALLOW_ALL);
    expect(await reaches(task)).toBe(true);
    expect((await setAccess(task, EMPTY)).code).toBe(0);
    expect(await reaches(task)).toBe(false);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it("reads the request as Modal's Python SDK serializes it (_experimental_set_outbound_network_policy with both lists)", async () => {
    const task = await running(EMPTY);
    const str = (field: number, s: string) => {
      const b = Buffer.from(s);
      return [(field << 3) | 2, b.length, ...b];
    };
    // NetworkAccess{network_access_type: ALLOWLIST (3), allowed_cidrs: ["0.0.0.0/0"], allowed_domains: ["*"]}
    const access = [0x08, 3, ...str(2, '0.0.0.0/0'), ...str(3, '*')];
    const bytes = new Uint8Array([...str(1, task.taskId), 0x12, access.length, ...access]);
    const pkg = 'modal.task_command_router';
    const r = await h.client.call(
      `/${pkg}.TaskCommandRouter/TaskSetNetworkAccess`,
      `${pkg}.TaskSetNetworkAccessRequest`,
      `${pkg}.TaskSetNetworkAccessResponse`,
      bytes,
      { authorization: `Bearer ${task.jwt}` },
    );
    expect(r.code).toBe(0);
    expect(await reaches(task)).toBe(true);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it("refuses what Modal's router refuses, and what the simulator cannot enforce, leaving the network as it was", async () => {
    const task = await running(EMPTY);
    expect(await setAccess(task)).toMatchObject({ code: Code.INVALID_ARGUMENT, message: 'network_access is required' });
    // Open access is an allow-all allowlist on a running task (task_command_router.proto).
    expect(await setAccess(task, { network_access_type: 'OPEN' })).toMatchObject({
      code: Code.INVALID_ARGUMENT,
      message: expect.stringMatching(/only ALLOWLIST .*allow-all allowlist/),
    });
    expect(await setAccess(task, { network_access_type: 'BLOCKED' })).toMatchObject({ code: Code.INVALID_ARGUMENT });
    expect(await setAccess(task, { network_access_type: 'ALLOWLIST', allowed_cidrs: ['10.0.0.0/33'] })).toMatchObject({
      code: Code.INVALID_ARGUMENT,
      message: expect.stringMatching(/not a CIDR/),
    });
    expect(await setAccess(task, { network_access_type: 'ALLOWLIST', allowed_domains: [''] })).toMatchObject({
      code: Code.INVALID_ARGUMENT,
      message: expect.stringMatching(/is not a domain name/),
    });
    expect(await reaches(task)).toBe(false);

    const other = await running(EMPTY);
    expect(await h.router('TaskSetNetworkAccess', { task_id: other.taskId, network_access: ALLOW_ALL }, task.jwt)).toMatchObject({
      code: Code.PERMISSION_DENIED,
    });
    expect(await reaches(other)).toBe(false);
    await h.ok('SandboxTerminate', { sandbox_id: other.sandboxId });
    expect((await setAccess(other, ALLOW_ALL)).code).toBe(Code.NOT_FOUND);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it('a task made BLOCKED has no network to change; block_network cannot be combined with an allowlist', async () => {
    const task = await running({ network_access_type: 'BLOCKED' }, { block_network: true });
    expect(await setAccess(task, ALLOW_ALL)).toMatchObject({ code: Code.FAILED_PRECONDITION });
    expect(await interfaces(task)).toEqual(['lo']);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
    const bad = await h.cp('SandboxCreate', { app_id: appId, definition: { image_id: imageId, block_network: true, network_access: EMPTY } });
    expect(bad.code).toBe(Code.INVALID_ARGUMENT);
  });
});

interface TlsListener {
  host: string;
  /** The bytes each connection sent, as received. */
  received: Buffer[];
  close(): Promise<void>;
}

/** A listener on port 443 of `host` keeping what each connection sends (it never answers). */
async function tlsListener(host: string): Promise<TlsListener> {
  const received: Buffer[] = [];
  const server = createServer((s) => {
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => received.push(Buffer.concat(chunks)));
    setTimeout(() => s.end(), 300);
  });
  await new Promise<void>((r) => server.listen(443, host, r));
  return { host, received, close: () => new Promise((r) => server.close(() => r())) };
}

/** Sends a ClientHello naming `servername` from inside the task to the listener's port 443: true when the listener got it, whole. */
async function helloReaches(task: { taskId: string; jwt: string }, servername: string): Promise<boolean> {
  const hello = await clientHello(servername);
  await run(task, `echo ${hello.toString('base64')} | base64 -d | nc -w 2 ${tls.host} 443`);
  // The listener ends its side after 0.3 s; what it got is kept when the connection closes.
  await new Promise((r) => setTimeout(r, 500));
  return tls.received.some((b) => b.equals(hello));
}

describe('allowlists of domains, matched on the TLS server name (port 443)', () => {
  const DOMAINS = { network_access_type: 'ALLOWLIST', allowed_cidrs: [], allowed_domains: ['api.allowed.test', '*.wild.test'] };

  it('a positive control: with an allow-all allowlist every server name reaches the listener', async () => {
    const task = await running(ALLOW_ALL);
    expect(await helloReaches(task, 'denied.test')).toBe(true);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it("lets through the names listed and the subdomains of a wildcard, not other names, the wildcard's own name, or any address", async () => {
    const task = await running(DOMAINS);
    expect(await helloReaches(task, 'api.allowed.test')).toBe(true);
    expect(await helloReaches(task, 'a.b.wild.test')).toBe(true);
    expect(await helloReaches(task, 'API.Allowed.Test')).toBe(true);
    expect(await helloReaches(task, 'denied.test')).toBe(false);
    expect(await helloReaches(task, 'wild.test')).toBe(false);
    expect(await helloReaches(task, 'allowed.test')).toBe(false);
    // Not TLS at all, to the same port; and another port of the same address.
    const before = tls.received.length;
    await run(task, `printf 'GET / HTTP/1.0\\r\\nHost: api.allowed.test\\r\\n\\r\\n' | nc -w 2 ${tls.host} 443`);
    await new Promise((r) => setTimeout(r, 500));
    expect(tls.received.slice(before).some((b) => b.length > 0)).toBe(false);
    expect(await reaches(task)).toBe(false);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });

  it('switches between domains, CIDRs and none; the gate goes with the sandbox', async () => {
    const task = await running(EMPTY);
    expect(await helloReaches(task, 'api.allowed.test')).toBe(false);
    expect((await setAccess(task, DOMAINS)).code).toBe(0);
    expect(await helloReaches(task, 'api.allowed.test')).toBe(true);
    expect(await reaches(task)).toBe(false);
    // Domains and the listeners' addresses: an address lets any protocol out, 443 included.
    const both = { ...DOMAINS, allowed_cidrs: [`${listener.host}/32`, `${tls.host}/32`] };
    expect((await setAccess(task, both)).code).toBe(0);
    expect(await reaches(task)).toBe(true);
    expect(await helloReaches(task, 'denied.test')).toBe(true);
    expect((await setAccess(task, { ...DOMAINS, allowed_domains: ['other.test'] })).code).toBe(0);
    expect(await helloReaches(task, 'api.allowed.test')).toBe(false);
    expect(await helloReaches(task, 'other.test')).toBe(true);
    expect((await setAccess(task, EMPTY)).code).toBe(0);
    expect(await helloReaches(task, 'other.test')).toBe(false);
    expect((await setAccess(task, DOMAINS)).code).toBe(0);
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
    await h.ok('SandboxWait', { sandbox_id: task.sandboxId, timeout: 10 });
    expect(await sim.docker.listContainers({ all: true, filters: { label: [`${SIM_LABEL}=${task.sandboxId}`] } })).toEqual([]);
  });

  it('refuses what is not a domain name, and IPv6 ranges it cannot filter', async () => {
    const task = await running(EMPTY);
    expect(await setAccess(task, { ...DOMAINS, allowed_domains: ['a,b.test'] })).toMatchObject({
      code: Code.INVALID_ARGUMENT,
      message: expect.stringMatching(/allowed_domains: "a,b.test" is not a domain name/),
    });
    expect(await setAccess(task, { network_access_type: 'ALLOWLIST', allowed_cidrs: ['fd00::/8'] })).toMatchObject({
      code: Code.UNIMPLEMENTED,
      message: expect.stringMatching(/IPv4 CIDRs, not "fd00::\/8"/),
    });
    await h.ok('SandboxTerminate', { sandbox_id: task.sandboxId });
  });
});

// The simulator's TaskSetNetworkAccess, driven by a raw gRPC client: a task made with an allowlist
// policy is switched between an empty allowlist and an allow-all one, and its container really
// loses and regains the engine's bridge (a listener on the bridge's gateway, this machine, is the
// proof; nothing leaves this machine). Requests are validated as Modal's router does. Needs the
// Docker engine and berth-test/busybox:latest.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenForTokens } from '@berth/conformance';
import type { ReachableListener } from '@berth/conformance';
import { bridgeGateway } from '@berth/test-support/docker-bridge';
import { Harness } from '@berth/test-support/modal-sim/harness';
import { Code, ModalSimulator } from '@berth/test-support/modal-sim';

const BUSYBOX = 'berth-test/busybox:latest';
const EMPTY = { network_access_type: 'ALLOWLIST', allowed_cidrs: [], allowed_domains: [] };
const ALLOW_ALL = { network_access_type: 'ALLOWLIST', allowed_cidrs: ['0.0.0.0/0'], allowed_domains: ['*'] };

let sim: ModalSimulator;
let h: Harness;
let appId: string;
let imageId: string;
let listener: ReachableListener;

beforeAll(async () => {
  sim = await ModalSimulator.start({ longPollMs: 2000 });
  h = new Harness(sim);
  appId = await h.app('berth-sim-network');
  imageId = (await h.build(appId, [`FROM ${BUSYBOX}`])).imageId;
  listener = await listenForTokens(await bridgeGateway());
});

afterAll(async () => {
  await listener?.close();
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
    expect(await setAccess(task, { network_access_type: 'ALLOWLIST', allowed_domains: ['example.com'] })).toMatchObject({
      code: Code.UNIMPLEMENTED,
      message: expect.stringMatching(/the simulator enforces/),
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

// Start telemetry on the real engine: a start that really pulls (its private image pushed under a
// tag of this file's own and removed locally first) reaches requested, admitted, pulled, accepted,
// running, then firstCommand at the first exec, in that order, each once; and the engine's own
// events agree: the container's 'create' came before 'accepted' was said (and nearer to it than
// the container's 'start'), its 'start' before 'running'.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Environment, StartMark, StartTimings } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

const docker = new Docker();
const LOCAL = 'berth-test/busybox:latest';
const REPO = '127.0.0.1:5000/berth/private-busybox';
const TAG = 'start-timings';
const REF = `${REPO}:${TAG}`;
const AUTH = { username: 'berth', password: 'berth-test-secret' };

const envs: Environment[] = [];

async function removeLocal(): Promise<void> {
  await docker
    .getImage(REF)
    .remove({ force: true })
    .catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 404) throw error;
    });
}

beforeAll(async () => {
  // This file's own tag in the test registry, then gone from the engine: the start must pull it.
  await docker.getImage(LOCAL).tag({ repo: REPO, tag: TAG });
  const push = await docker.getImage(REF).push({ authconfig: { ...AUTH, serveraddress: '127.0.0.1:5000' } });
  const pushed = await new Promise<{ error?: string }[]>((resolve, reject) => docker.modem.followProgress(push, (e, out) => (e ? reject(e) : resolve(out))));
  const failed = pushed.find((line) => line.error);
  if (failed) throw new Error(`pushing ${REF} failed: ${failed.error}`);
  await removeLocal();
}, 60_000);

afterAll(async () => {
  await Promise.all(envs.map((e) => e.teardown()));
  await removeLocal();
});

/** The container's lifecycle events ('create', 'start'...) as the engine timed them, in ms since the epoch. */
async function engineEvents(id: string, since: number): Promise<Map<string, number>> {
  const stream = await docker.getEvents({
    since: Math.floor(since / 1000) - 1,
    until: Math.ceil(Date.now() / 1000) + 1,
    filters: { type: ['container'], container: [id] },
  });
  let text = '';
  for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString('utf8');
  const events = new Map<string, number>();
  for (const line of text.split('\n').filter(Boolean)) {
    const event = JSON.parse(line) as { Action: string; timeNano: number };
    if (!events.has(event.Action)) events.set(event.Action, event.timeNano / 1e6);
  }
  return events;
}

describe('start timings on Docker', () => {
  it('a real start with a pull reaches its marks in order, each once, as the engine saw it', async () => {
    const env = createDockerBackend().environment({ image: { ref: REF, auth: AUTH }, network: 'none' });
    envs.push(env);
    const told: StartMark[] = [];
    let pullEvents = 0;
    let pullEventsAtPulled = -1;
    env.events.on('pull', () => pullEvents++);
    env.events.on('reached', (mark) => {
      told.push(mark);
      if (mark === 'pulled') pullEventsAtPulled = pullEvents;
    });
    await env.start();
    await env.exec('true');
    expect(told).toEqual(['requested', 'admitted', 'pulled', 'accepted', 'running', 'firstCommand']);
    // It really pulled, and 'pulled' came once the pull was over.
    expect(pullEventsAtPulled).toBeGreaterThan(0);
    expect(pullEventsAtPulled).toBe(pullEvents);

    const timings = env.startTimings as StartTimings;
    const order = told.map((mark) => timings.marks[mark]!);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const wall = (mark: StartMark) => timings.requestedAt + timings.marks[mark]!;
    const engine = await engineEvents(env.id, timings.requestedAt);
    const created = engine.get('create');
    const started = engine.get('start');
    expect(created, `the engine's events: ${[...engine.keys()].join(', ')}`).toBeDefined();
    expect(started).toBeDefined();
    // Milliseconds rounded on both sides: 2 ms either way. 'accepted' is said when the create is
    // answered, the container's start still to come: nearer the engine's 'create' than its 'start'.
    expect(created!).toBeLessThanOrEqual(wall('accepted') + 2);
    expect(wall('accepted') - created!).toBeLessThan(started! - wall('accepted'));
    expect(started!).toBeLessThanOrEqual(wall('running') + 2);
  }, 180_000);
});

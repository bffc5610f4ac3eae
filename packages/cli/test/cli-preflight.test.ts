import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { berth } from './support/berth-bin.js';
import { PRIVATE_IMAGE, writeDataset } from './support/dataset.js';

let root: string;
let tasks: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-preflight-'));
  tasks = await writeDataset(join(root, 'tasks'), [
    { id: 'public-1', kind: 'pass' },
    { id: 'public-2', kind: 'pass' },
    { id: 'private-1', kind: 'private' },
    { id: 'private-2', kind: 'private' },
    { id: 'private-3', kind: 'private' },
  ]);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('berth preflight', () => {
  it('fails, once per distinct image, on a private image without credentials', async () => {
    const result = await berth(['preflight', tasks], { env: { DOCKER_CONFIG: join(root, 'none') } });
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines.filter((l) => l.includes(PRIVATE_IMAGE))).toHaveLength(1);
    expect(lines.find((l) => l.includes(PRIVATE_IMAGE))).toMatch(/^FAIL +127\.0\.0\.1:5000\/berth\/private-busybox:cli +3 \(private-1, …\) +.*(unauthorized|denied|credentials)/i);
    expect(lines.find((l) => l.includes('berth-test/busybox:latest'))).toMatch(/^OK +/);
    expect(result.stdout).toContain('FAILED: 1 of 2 image(s), 3 of 5 task(s), would fail');

    const json = await berth(['preflight', tasks, '--json'], { env: { DOCKER_CONFIG: join(root, 'none') } });
    const data = JSON.parse(json.stdout) as { ok: boolean; images: Array<{ image: string; tasks: string[]; status: string }> };
    expect(data.ok).toBe(false);
    expect(data.images.map((i) => [i.image, i.tasks.length, i.status])).toEqual([
      [PRIVATE_IMAGE, 3, 'fail'],
      ['berth-test/busybox:latest', 2, 'ok'],
    ]);
  });

  it("passes with the credentials a run would use (Docker's config), and never prints the password", async () => {
    const config = join(root, 'docker-config');
    await mkdir(config, { recursive: true });
    const auth = Buffer.from('berth:berth-test-secret').toString('base64');
    await writeFile(join(config, 'config.json'), JSON.stringify({ auths: { '127.0.0.1:5000': { auth } } }));
    const result = await berth(['preflight', tasks], { env: { DOCKER_CONFIG: config } });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('ok: 2 image(s) for 5 task(s) can be run on docker');
    expect(result.stdout + result.stderr).not.toContain('berth-test-secret');
  });
});

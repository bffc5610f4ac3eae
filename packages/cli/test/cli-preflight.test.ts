import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRegistryLogin } from '@berth/test-support/registry-login';
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
    expect(lines.find((l) => l.includes(PRIVATE_IMAGE))).toMatch(
      /^FAIL +127\.0\.0\.1:5000\/berth\/private-busybox:cli +3 \(private-1, …\) +.*(unauthorized|denied|credentials)/i,
    );
    expect(lines.find((l) => l.includes('berth-test/busybox:latest'))).toMatch(/^OK +/);
    expect(result.stdout).toContain('FAILED: 1 of 2 image(s): 3 of 5 task(s) would fail');

    const json = await berth(['preflight', tasks, '--json'], { env: { DOCKER_CONFIG: join(root, 'none') } });
    const data = JSON.parse(json.stdout) as { ok: boolean; images: Array<{ image: string; tasks: string[]; status: string }> };
    expect(data.ok).toBe(false);
    expect(data.images.map((i) => [i.image, i.tasks.length, i.status])).toEqual([
      [PRIVATE_IMAGE, 3, 'fail'],
      ['berth-test/busybox:latest', 2, 'ok'],
    ]);
  });

  it("passes with the credentials a run would use (Docker's config), and never prints the password", async () => {
    const config = await writeRegistryLogin(join(root, 'docker-config'));
    const result = await berth(['preflight', tasks], { env: { DOCKER_CONFIG: config } });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('ok: 2 image(s) for 5 task(s) can be run on docker');
    expect(result.stdout + result.stderr).not.toContain('berth-test-secret');
  });

  it('fails what would fail every attempt: no solve.sh for the oracle, no test.sh, a Dockerfile step that fails, a CRLF test.sh; prints each task note once', async () => {
    const broken = await writeDataset(join(root, 'broken'), [
      { id: 'good', kind: 'pass' },
      { id: 'no-solution', kind: 'pass' },
      { id: 'bad-build', kind: 'pass' },
      { id: 'crlf', kind: 'pass' },
      { id: 'typo', kind: 'pass' },
      { id: 'no-tests', kind: 'pass' },
    ]);
    await rm(join(broken, 'no-solution', 'solution'), { recursive: true });
    // A row of its own, not the end of the check (preflight used to stop at the first such task).
    await rm(join(broken, 'no-tests', 'tests', 'test.sh'));
    // An image built from a Dockerfile whose RUN step fails.
    const toml = join(broken, 'bad-build', 'task.toml');
    await writeFile(toml, (await readFile(toml, 'utf8')).replace(/docker_image = .*\n/, ''));
    await mkdir(join(broken, 'bad-build', 'environment'), { recursive: true });
    await writeFile(join(broken, 'bad-build', 'environment', 'Dockerfile'), 'FROM berth-test/busybox:latest\nRUN echo preparing && exit 7\n');
    await writeFile(join(broken, 'crlf', 'tests', 'test.sh'), '#!/bin/sh\r\necho 1 > /logs/verifier/reward.txt\r\n');
    const typoToml = join(broken, 'typo', 'task.toml');
    await writeFile(typoToml, `${await readFile(typoToml, 'utf8')}\n[verifer]\ntimeout_sec = 10.0\n`);

    const result = await berth(['preflight', broken]);
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines.filter((l) => l.startsWith('note: typo: '))).toEqual([
      'note: typo: verifer is not a harbor task.toml field: ignored (harbor ignores it too); did you mean verifier?',
    ]);
    expect(lines.find((l) => l.includes('no-solution') && l.startsWith('FAIL'))).toMatch(
      /solution\/solve.sh +there is no solution\/solve.sh, which the oracle agent runs/,
    );
    expect(lines.find((l) => l.includes('no-tests') && l.startsWith('FAIL'))).toMatch(/tests\/test.sh +there is no tests\/test.sh/);
    expect(lines.find((l) => l.includes('crlf') && l.startsWith('FAIL'))).toMatch(/tests\/test.sh +tests\/test.sh has Windows line endings \(CRLF\)/);
    expect(lines.find((l) => l.includes('bad-build') && l.startsWith('FAIL'))).toMatch(/ImageBuildError: .*exit.* 7|ImageBuildError: .*RUN echo preparing/);
    expect(result.stdout).toMatch(/FAILED: 1 of 2 image\(s\) and 3 task definition\(s\): 4 of 6 task\(s\) would fail/);

    // --agent none needs no solution; --no-build leaves the Dockerfile unchecked (a warning).
    const lenient = await berth(['preflight', broken, '--agent', 'none', '--no-build', '--json']);
    const data = JSON.parse(lenient.stdout) as { tasks: Array<{ task: string }>; images: Array<{ image: string; status: string }> };
    expect(data.tasks.map((t) => t.task)).toEqual(['crlf', 'no-tests']);
    expect(data.images.find((i) => i.image.includes('bad-build'))?.status).toBe('warn');

    // The run prints the note too, once.
    const run = await berth(['run', broken, '--filter', 'typo', '--job-dir', join(root, 'typo-job')]);
    expect(run.stdout.split('\n').filter((l) => l.startsWith('note: typo: '))).toHaveLength(1);
  }, 180_000);
});

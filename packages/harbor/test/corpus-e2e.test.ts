// Real task.toml files from the corpus, run end to end on Docker as they are, each with a
// Dockerfile whose base is the local test image (the real bases are not reachable from here) and a
// small oracle and verifier that record what each phase saw.
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile } from '@berth/harbor';
import { BASIC_IMAGE, removeBuiltImages, tempDir } from './support.js';

const CORPUS = fileURLToPath(new URL('../../../test/fixtures/harbor-corpus/', import.meta.url));
const cleanup: string[] = [];
const contexts: string[] = [];
afterAll(async () => {
  await removeBuiltImages(contexts);
  await Promise.all(cleanup.map((d) => rm(d, { recursive: true, force: true })));
});

/** The users and directories the chosen tasks name, on the local test image. */
const DOCKERFILE = `FROM ${BASIC_IMAGE}
RUN mkdir -p /app /workspace && chmod 777 /app /workspace \\
 && echo 'agent:x:1000:1000::/app:/bin/sh' >> /etc/passwd && echo 'verifier:x:1001:1001::/app:/bin/sh' >> /etc/passwd
`;
const SOLVE = "#!/bin/sh\necho \"agent uid=$(id -u) pwd=$(pwd) net=$(ls /sys/class/net | tr '\\n' ',')\" > /tmp/agent.txt\n";
const TEST = `#!/bin/sh
cp /tmp/agent.txt /logs/verifier/agent.txt
echo "verifier uid=$(id -u) pwd=$(pwd) net=$(ls /sys/class/net | tr '\\n' ',')" > /logs/verifier/verifier.txt
env > /logs/verifier/env.txt
test -f /tmp/agent.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
`;

const CHOSEN = [
  '05-cookbook-simple-task',
  '17-johnbuck-verifier-env-judge',
  '22-expo-verifier-env-empty-default',
  '29-aligned-agent-user-verifier-root',
  '37-rego-version20-snorkel-meta',
  '45-purple-hello-memory-string',
];

describe('corpus tasks end to end on Docker', () => {
  it('each runs with its own task.toml as harbor would run it, and scores 1', { timeout: 240_000 }, async () => {
    const base = await tempDir('corpus-e2e');
    cleanup.push(base);
    const tasksDir = join(base, 'tasks');
    for (const name of CHOSEN) {
      const dir = join(tasksDir, name);
      await mkdir(join(dir, 'environment'), { recursive: true });
      await cp(join(CORPUS, name, 'task.toml'), join(dir, 'task.toml'));
      await writeFile(join(dir, 'environment', 'Dockerfile'), `${DOCKERFILE}# ${name}\n`);
      contexts.push(join(dir, 'environment'));
      for (const [sub, file, text] of [
        ['solution', 'solve.sh', SOLVE],
        ['tests', 'test.sh', TEST],
      ] as const) {
        await mkdir(join(dir, sub), { recursive: true });
        await writeFile(join(dir, sub, file), text);
      }
    }
    const hostEnv = { ANTHROPIC_API_KEY: 'sk-ant-corpus-test-key-1', OPENROUTER_API_KEY: 'sk-or-corpus-test-key-2' };
    const jobDir = join(base, 'job');
    const run = await runHarborJob({ tasksDir, backend: createDockerBackend(), jobDir, hostEnv, concurrency: 2 });
    for (const record of run.tasks) expect(record, record.taskId).toMatchObject({ status: 'scored', outcome: { reward: 1 } });

    const read = async (name: string, file: string) => readFile(join(jobDir, name, 'attempt-1', file), 'utf8');
    const result = async (name: string) => JSON.parse(await read(name, 'result.json')) as AttemptResultFile;

    // allow_internet / network_mode as harbor reads them: public by default, none when false.
    expect(await read('05-cookbook-simple-task', 'verifier/agent.txt')).toMatch(/net=.*eth0/);
    expect(await read('37-rego-version20-snorkel-meta', 'verifier/agent.txt')).toMatch(/net=lo,$/m);
    expect((await result('37-rego-version20-snorkel-meta')).environment?.network).toEqual({
      environment: 'none',
      agent: 'none',
      verifier: 'none',
      switched: false,
    });

    // Users: the agent as "agent", the verifier as "root".
    expect(await read('29-aligned-agent-user-verifier-root', 'verifier/agent.txt')).toMatch(/^agent uid=1000 /);
    expect(await read('29-aligned-agent-user-verifier-root', 'verifier/verifier.txt')).toMatch(/^verifier uid=0 /);

    // workdir, and [verifier.env] with ${VAR:-} defaults (empty) for test.sh only.
    expect(await read('22-expo-verifier-env-empty-default', 'verifier/agent.txt')).toMatch(/ pwd=\/app /);
    const env22 = await read('22-expo-verifier-env-empty-default', 'verifier/env.txt');
    expect(env22).toMatch(/^EVAL_RESULT_PATH=$/m);
    expect(env22).toMatch(/^MOBILE_EVAL_COMMAND=$/m);

    // ${VAR} from the host: in the container ([environment.env]) and for test.sh ([verifier.env]); never in result.json.
    const env17 = await read('17-johnbuck-verifier-env-judge', 'verifier/env.txt');
    expect(env17).toContain(`OPENROUTER_API_KEY=${hostEnv.OPENROUTER_API_KEY}`);
    expect(env17).toContain(`ANTHROPIC_API_KEY=${hostEnv.ANTHROPIC_API_KEY}`);
    const record17 = await read('17-johnbuck-verifier-env-judge', 'result.json');
    expect(record17).not.toContain(hostEnv.OPENROUTER_API_KEY);
    expect(record17).not.toContain(hostEnv.ANTHROPIC_API_KEY);
    expect((JSON.parse(record17) as AttemptResultFile).environment?.env).toMatchObject({
      environment: ['OPENROUTER_API_KEY'],
      verifier: ['ANTHROPIC_API_KEY', 'MODEL_NAME'],
    });

    // Resources as written: memory = "4G", cpus = 2.
    expect((await result('45-purple-hello-memory-string')).environment?.resources).toEqual({ cpus: 2, memoryMb: 4096 });
  });
});

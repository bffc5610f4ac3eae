#!/usr/bin/env node
// The main job, end to end: run the harbor-layout tasks in examples/tasks through berth's runner,
// each in its own Docker sandbox, with the oracle agent (solution/solve.sh) and the task's
// verifier (tests/test.sh). Transient infrastructure failures are retried; the report says how many
// tasks were really scored and whether the run is valid. Prints each task's reward and step
// timings, then the run report; exits non-zero when the run is invalid.
//
//   node examples/quickstart.mjs [tasks-dir]     (default: examples/tasks)
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob } from '@berth/harbor';

const tasksDir = resolve(process.argv[2] ?? new URL('./tasks', import.meta.url).pathname);
const jobDir = await mkdtemp(join(tmpdir(), 'berth-quickstart-'));
console.log(`tasks    ${tasksDir}`);
console.log(`job      ${jobDir}   (result.json per attempt, verifier output, journal.jsonl, report.json)`);

const { report } = await runHarborJob({
  tasksDir,
  backend: createDockerBackend(),
  jobDir,
  agent: 'oracle',
  concurrency: 4,
  maxAttempts: 3,
});

// Per task: the chosen attempt (the first usable one), or the last one when none was usable.
const job = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8'));
for (const task of job.tasks) {
  const result = task.resultPath ? JSON.parse(await readFile(join(jobDir, task.resultPath), 'utf8')) : undefined;
  const tries = `attempt ${task.chosenAttempt ?? task.attempts.at(-1)?.attempt ?? '-'} of ${task.attempts.length}`;
  const verdict =
    task.reward !== undefined
      ? `reward ${task.reward}`
      : task.status === 'task_failed'
        ? `task failure: ${task.failureType}`
        : `${task.status}: ${task.failureCategory} (${task.failureType})`;
  console.log(`\n${task.taskId}   ${verdict}   (${tries}${result ? `, image ${result.image}` : ''})`);
  if (task.reward === undefined && task.failureMessage) console.log(`  ${task.failureMessage}`);
  for (const step of result?.steps ?? []) {
    const extra =
      step.exitCode !== undefined
        ? `  exit ${step.exitCode}${step.timedOut ? ' (timed out)' : ''}`
        : step.ended === 'completed'
          ? ''
          : `  failed: ${step.errorType}`;
    console.log(`  ${step.name.padEnd(24)} ${step.durationMs.toFixed(1).padStart(8)} ms${extra}`);
  }
  if (result) console.log(`  ${'total'.padEnd(24)} ${result.durationMs.toFixed(1).padStart(8)} ms`);
}

const mean = report.score ? `${report.score.mean.toFixed(3)} over ${report.score.over} scored` : 'n/a';
console.log(`\nscored   ${report.scored}/${report.total}   coverage ${report.coverage.toFixed(3)}   mean reward ${mean}`);
console.log(
  `attempts ${report.attempts} (${report.retries} retries)   task failures ${report.taskFailures}   ` +
    `infra failed ${report.infraFailed.total} (transient ${report.infraFailed.transient}, permanent ${report.infraFailed.permanent})   ` +
    `not run ${report.notRun.total}`,
);
console.log(`valid    ${report.valid ? 'yes' : 'NO'}`);
for (const reason of report.invalidReasons) console.log(`  - ${reason}`);
process.exit(report.valid ? 0 : 1);

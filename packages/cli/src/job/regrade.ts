import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readReward } from '@berth/harbor';
import type { AttemptView, JobData } from './job-data.js';

/** One graded attempt: what the run recorded and what the archived verifier output says now. */
export interface RegradedAttempt {
  taskId: string;
  attempt: number;
  chosen: boolean;
  /** The recorded reward; a task failure counts as 0, as in the report. */
  recorded: number;
  /** Undefined when the parser failed (see `error`). */
  regraded?: number;
  error?: string;
  /** 'fake zero': recorded 0, the output says it passed; 'fake pass': the reverse. */
  kind?: 'agree' | 'fake zero' | 'fake pass' | 'differs';
}

export interface RegradeResult {
  graded: number;
  /** Attempts with no verifier output to grade (infrastructure failures before the verifier). */
  skipped: number;
  agreed: number;
  /** agreed / graded; null when nothing could be graded (a 100 % of nothing would read as a pass). */
  agreement: number | null;
  disagreements: RegradedAttempt[];
  errors: RegradedAttempt[];
  /**
   * Mean reward over the chosen attempts as recorded (`over` of them), and over those of them that
   * could be regraded, as regraded (`regradedOver`); null where there is nothing to average. A
   * recorded value never stands in for a regraded one.
   */
  mean: { recorded: number | null; over: number; regraded: number | null; regradedOver: number };
  attempts: RegradedAttempt[];
}

/** A shell command given the archived verifier output; its last line of stdout is the reward. */
export interface RewardParser {
  command: string;
  timeoutMs: number;
}

function taskDirOf(job: JobData, taskId: string): string | undefined {
  const root = job.report.tasksDir;
  if (!root) return undefined;
  // A job over one task directory records that directory itself.
  return job.tasks.length === 1 && root.endsWith(`/${taskId}`) ? root : join(root, taskId);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

function runParser(parser: RewardParser, cwd: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', parser.command], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      signal: AbortSignal.timeout(parser.timeoutMs),
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const stdoutFile = join(cwd, 'test-stdout.txt');
    stat(stdoutFile).then(
      () =>
        createReadStream(stdoutFile)
          .on('error', () => child.stdin.end())
          .pipe(child.stdin)
          .on('error', () => undefined),
      () => child.stdin.end(),
    );
    child.on('error', (e) => reject(new Error(e.name === 'AbortError' ? `the reward parser did not finish within ${parser.timeoutMs / 1000} s` : e.message)));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the reward parser exited ${code}${err.trim() ? `: ${err.trim().split('\n').slice(-2).join(' | ')}` : ''}`));
      const last = out.trim().split('\n').at(-1)?.trim() ?? '';
      const value = Number(last);
      if (last === '' || !Number.isFinite(value)) return reject(new Error(`the reward parser printed ${JSON.stringify(last.slice(0, 80))}, not a number`));
      resolve(value);
    });
  });
}

async function regradeOne(job: JobData, a: AttemptView, parser: RewardParser | undefined): Promise<RegradedAttempt | undefined> {
  const recorded = a.reward ?? (a.category === 'task_failure' ? 0 : undefined);
  const verifierDir = join(job.jobDir, a.dir, 'verifier');
  if (recorded === undefined || !(await exists(verifierDir))) return undefined;
  const base = { taskId: a.taskId, attempt: a.attempt, chosen: a.chosen, recorded };
  try {
    let regraded: number;
    if (parser) {
      const taskDir = taskDirOf(job, a.taskId);
      regraded = await runParser(parser, verifierDir, {
        BERTH_VERIFIER_DIR: verifierDir,
        BERTH_ATTEMPT_DIR: join(job.jobDir, a.dir),
        BERTH_TASK_ID: a.taskId,
        ...(taskDir ? { BERTH_TASK_DIR: taskDir } : {}),
      });
    } else {
      // harbor's own rule on the archived files: a missing or invalid reward counts as 0.
      regraded = await readReward(verifierDir).then(
        (o) => o.reward,
        () => 0,
      );
    }
    const kind =
      Math.abs(regraded - recorded) < 1e-9 ? 'agree' : recorded === 0 && regraded > 0 ? 'fake zero' : recorded > 0 && regraded === 0 ? 'fake pass' : 'differs';
    return { ...base, regraded, kind };
  } catch (error) {
    return { ...base, error: (error as Error).message };
  }
}

/** Recompute every attempt's reward offline from its archived verifier output and compare with the record. */
export async function regradeJob(job: JobData, parser?: RewardParser, concurrency = 4): Promise<RegradeResult> {
  const all = job.tasks.flatMap((t) => t.attempts);
  const results: Array<RegradedAttempt | undefined> = new Array(all.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, all.length) }, async () => {
      while (next < all.length) {
        const i = next++;
        results[i] = await regradeOne(job, all[i]!, parser);
      }
    }),
  );
  const attempts = results.filter((r): r is RegradedAttempt => r !== undefined);
  const graded = attempts.filter((r) => r.regraded !== undefined);
  const agreed = graded.filter((r) => r.kind === 'agree').length;
  const chosen = attempts.filter((r) => r.chosen);
  const regradedChosen = chosen.filter((r) => r.regraded !== undefined);
  const mean = (list: RegradedAttempt[], pick: (r: RegradedAttempt) => number) =>
    list.length === 0 ? null : list.reduce((s, r) => s + pick(r), 0) / list.length;
  return {
    graded: graded.length,
    skipped: all.length - attempts.length,
    agreed,
    agreement: graded.length === 0 ? null : agreed / graded.length,
    disagreements: graded.filter((r) => r.kind !== 'agree'),
    errors: attempts.filter((r) => r.error !== undefined),
    mean: {
      recorded: mean(chosen, (r) => r.recorded),
      over: chosen.length,
      regraded: mean(regradedChosen, (r) => r.regraded!),
      regradedOver: regradedChosen.length,
    },
    attempts,
  };
}

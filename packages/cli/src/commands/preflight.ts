import { resolve } from 'node:path';
import { serializeError, type EnvironmentSpecInput, type PreflightCheck, type PreflightStatus } from '@berth/core';
import { buildSpec, type HarborTask } from '@berth/harbor';
import type { Command } from 'commander';
import { addBackendOptions, loadBackend, type BackendFlags } from '../backends.js';
import { collect } from '../options.js';
import { renderTable } from '../table.js';
import { agentFromOption } from '../agent-command.js';
import { checkInCliWords } from '../cli-words.js';
import { buildCheck, taskRows } from '../preflight-checks.js';
import { loadSelected } from '../task-filter.js';
import { printNotes } from '../task-notes.js';

interface PreflightOptions extends BackendFlags {
  agent: string;
  build: boolean;
  filter?: string[];
  json?: boolean;
}

/** One distinct image (or build) of the dataset, checked once for all the tasks that use it. */
export interface ImageRow {
  image: string;
  tasks: string[];
  status: PreflightStatus;
  checks: PreflightCheck[];
}

/** The image as a person names it: a reference, or the build context it is built from. */
function imageName(image: EnvironmentSpecInput['image']): string {
  if (typeof image === 'string') return image;
  return 'ref' in image ? image.ref : `built from ${image.build.context}`;
}

/** What sets a group apart besides its image, in the CLI's words. */
function specWords(spec: ReturnType<typeof buildSpec>['spec']): string {
  const words = [`network ${spec.network ?? 'public'}${spec.networkSwitch ? ', switched per phase' : ''}`];
  const r = spec.resources;
  if (r?.cpus !== undefined) words.push(`${r.cpus} cpu`);
  if (r?.memoryMb !== undefined) words.push(`${r.memoryMb} MB`);
  if (r?.gpus) words.push(`${r.gpus} gpu`);
  return words.join(', ');
}

const RANK: Record<PreflightStatus, number> = { ok: 0, warn: 1, fail: 2 };
const worst = (checks: readonly PreflightCheck[]): PreflightStatus => checks.reduce<PreflightStatus>((w, c) => (RANK[c.status] > RANK[w] ? c.status : w), 'ok');

/** The first line of a check's message, in the CLI's words. */
function firstLine(check: PreflightCheck): string {
  return checkInCliWords(check).split('\n')[0] ?? '';
}

export async function preflightCommand(tasksPath: string, opts: PreflightOptions): Promise<number> {
  const tasksDir = resolve(tasksPath);
  const tasks = await loadSelected(tasksDir, opts.filter ?? []);
  const backend = await loadBackend(opts);
  if (!opts.json) printNotes(tasks, (text) => process.stdout.write(`${text}\n`));
  const broken = await taskRows(tasks, agentFromOption(opts.agent));
  const base = await backend.preflight();
  const baseNames = new Set(base.checks.map((c) => c.name));

  // Group by what the backend checks: the image that would be pulled or built (credentials
  // included), and what else the backend's preflight looks at (the network, which on Kubernetes
  // needs NetworkPolicy enforced; resources). Each group is asked once.
  const groups = new Map<string, { image: string; spec?: ReturnType<typeof buildSpec>['spec']; tasks: HarborTask[]; refused?: PreflightCheck }>();
  for (const task of tasks) {
    let key: string;
    let entry;
    try {
      const { spec } = buildSpec(task, backend);
      key = JSON.stringify([spec.image, spec.network, spec.networkSwitch ?? false, spec.resources ?? {}]);
      entry = groups.get(key) ?? { image: imageName(spec.image), spec, tasks: [] };
    } catch (error) {
      // The backend cannot run this task at all (a capability it lacks, a bad env template...).
      key = `task:${task.id}`;
      entry = {
        image: 'ref' in task.image ? task.image.ref : task.image.build.context,
        tasks: [],
        refused: { name: 'task', status: 'fail' as const, message: (error as Error).message, error: serializeError(error) },
      };
    }
    entry.tasks.push(task);
    groups.set(key, entry);
  }
  // An image checked in more than one way says which row is which.
  const seen = new Map<string, number>();
  for (const g of groups.values()) seen.set(g.image, (seen.get(g.image) ?? 0) + 1);
  for (const g of groups.values()) if (g.spec && (seen.get(g.image) ?? 0) > 1) g.image = `${g.image} (${specWords(g.spec)})`;
  const rows: ImageRow[] = [];
  for (const group of groups.values()) {
    let checks: PreflightCheck[];
    if (group.refused) checks = [group.refused];
    else if (!base.ok) checks = [{ name: 'backend', status: 'fail', message: 'not checked: the backend itself failed its checks' }];
    else checks = (await backend.preflight(group.spec)).checks.filter((c) => !baseNames.has(c.name));
    const image = group.spec?.image;
    const built = image !== undefined && typeof image === 'object' && 'build' in image;
    if (built && opts.build && worst(checks) !== 'fail') checks.push(await buildCheck(backend, group.spec!));
    else if (built && !opts.build)
      checks.push({ name: 'build', status: 'warn', message: 'not built (--no-build): a failing Dockerfile step shows only in the run' });
    rows.push({ image: group.image, tasks: group.tasks.map((t) => t.id), status: worst(checks), checks });
  }
  // The problems first.
  rows.sort((a, b) => RANK[b.status] - RANK[a.status] || a.image.localeCompare(b.image));
  const failing = rows.filter((r) => r.status === 'fail');
  const ok = base.ok && failing.length === 0 && broken.length === 0;

  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ok, backend: base, images: rows, tasks: broken }, null, 2)}\n`);
  } else {
    const out: string[] = [`backend ${backend.name}`];
    for (const c of base.checks) out.push(`  ${c.status.toUpperCase().padEnd(4)}  ${c.name}: ${firstLine(c)}`);
    out.push('');
    out.push(
      renderTable(
        ['STATUS', 'IMAGE', 'TASKS', 'DETAIL'],
        rows.map((r) => {
          const shown = r.checks.find((c) => c.status === r.status) ?? r.checks[0];
          const tasksCell = r.tasks.length <= 2 ? r.tasks.join(', ') : `${r.tasks.length} (${r.tasks[0]}, …)`;
          return [r.status.toUpperCase(), r.image, tasksCell, shown ? firstLine(shown) : ''];
        }),
      ),
    );
    out.push('');
    if (broken.length > 0) {
      out.push(
        renderTable(
          ['STATUS', 'TASK', 'CHECK', 'DETAIL'],
          broken.flatMap((r) => r.checks.map((c) => ['FAIL', r.task, c.name, firstLine(c)])),
        ),
      );
      out.push('');
    }
    const affected = new Set([...failing.flatMap((r) => r.tasks), ...broken.map((r) => r.task)]).size;
    const problems = [failing.length > 0 ? `${failing.length} of ${rows.length} image(s)` : '', broken.length > 0 ? `${broken.length} task definition(s)` : '']
      .filter(Boolean)
      .join(' and ');
    out.push(
      ok
        ? `ok: ${rows.length} image(s) for ${tasks.length} task(s) can be run on ${backend.name}`
        : `FAILED: ${base.ok ? `${problems}: ${affected} of ${tasks.length} task(s) would fail` : 'the backend is not usable'}; fix these before the run`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  }
  return ok ? 0 : 1;
}

export function registerPreflight(program: Command): void {
  const command = program
    .command('preflight')
    .description('Check, before a run, that the backend works and every distinct image can be pulled (or built) with the credentials the run would use')
    .argument('<tasks>', 'a dataset directory or one task directory');
  addBackendOptions(command)
    .option('--agent <agent>', "the agent the run will use ('oracle' needs solution/solve.sh in every task)", 'oracle')
    .option('--no-build', 'do not build environment/Dockerfile images (by default each is built once, and the run reuses it)')
    .option('--filter <glob>', 'only tasks whose id matches (repeatable)', collect)
    .option('--json', 'print the checks as JSON')
    .addHelpText(
      'after',
      `
Exit status: 0 when every task could run, 1 when any would fail, 2 on a usage error.

Example:
  berth preflight ./datasets/swebench --backend k8s`,
    )
    .action(async (tasks: string, opts: PreflightOptions) => {
      process.exitCode = await preflightCommand(tasks, opts);
    });
}

import { startPhaseStats } from './start-stats.js';
import type { JsonValue, RunReport, TaskRecord, ValidityThresholds } from './types.js';

export const DEFAULT_VALIDITY: Required<ValidityThresholds> = {
  minCoverage: 0.95,
  maxPermanentInfra: 0,
  maxUnclassified: 0,
  maxUnscored: 0,
};

function numericField(outcome: JsonValue | undefined, field: string): number | undefined {
  if (outcome === null || typeof outcome !== 'object' || Array.isArray(outcome)) return undefined;
  const value = (outcome as Record<string, JsonValue>)[field];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * The run's accounting from its task records. The denominator is never hidden: every task is
 * scored, infra_failed or not_run, and the run is invalid (with reasons in words) when permanent
 * infrastructure failures, unclassified errors or missing coverage pass their thresholds.
 */
export function buildRunReport(tasks: readonly TaskRecord[], options: { scoreField?: string; validity?: ValidityThresholds; durationMs: number }): RunReport {
  const field = options.scoreField ?? 'reward';
  const limits = { ...DEFAULT_VALIDITY, ...options.validity };
  const report: RunReport = {
    total: tasks.length,
    scored: 0,
    taskFailures: 0,
    infraFailed: { total: 0, transient: 0, permanent: 0, unclassified: 0 },
    notRun: { total: 0, deadline: 0, cancelled: 0 },
    coverage: 0,
    attempts: 0,
    retries: 0,
    byCategory: {},
    byType: {},
    unclassified: 0,
    unscored: 0,
    valid: true,
    invalidReasons: [],
    durationMs: options.durationMs,
    sandboxes: { created: 0, removed: 0, notRemoved: [] },
  };
  let sum = 0;
  let over = 0;
  const permanentTypes = new Set<string>();
  // Tasks defined wrongly (TaskDefinitionError): named in their own reason, not counted as the infrastructure's.
  const misdefined: string[] = [];
  for (const task of tasks) {
    report.attempts += task.attempts.length;
    // An attempt after one the run stopped (a deadline, a Ctrl-C) is that attempt run again, not a retry.
    task.attempts.forEach((_attempt, i) => {
      if (i > 0 && !task.attempts[i - 1]!.failure?.stoppedBy) report.retries++;
    });
    for (const attempt of task.attempts) {
      const sandboxes = attempt.sandboxes;
      if (sandboxes) {
        report.sandboxes.created += sandboxes.created;
        report.sandboxes.removed += sandboxes.removed;
        for (const left of sandboxes.notRemoved) report.sandboxes.notRemoved.push({ ...left, taskId: task.taskId, attempt: attempt.attempt });
      }
      if (!attempt.failure) continue;
      const { category, type } = attempt.failure;
      report.byCategory[category] = (report.byCategory[category] ?? 0) + 1;
      report.byType[type] = (report.byType[type] ?? 0) + 1;
    }
    if (task.status === 'scored') {
      report.scored++;
      if (task.failure) {
        report.taskFailures++;
        sum += 0;
        over++;
      } else {
        const value = numericField(task.outcome, field);
        if (value !== undefined) {
          sum += value;
          over++;
        } else report.unscored++;
      }
    } else if (task.status === 'infra_failed') {
      report.infraFailed.total++;
      const category = task.failure?.category;
      if (category === 'permanent_infra') {
        report.infraFailed.permanent++;
        if (task.failure?.type === 'TaskDefinitionError') misdefined.push(task.taskId);
        else permanentTypes.add(task.failure?.type ?? 'unknown');
      } else if (category === 'unclassified' || category === undefined) {
        report.infraFailed.unclassified++;
        report.unclassified++;
      } else report.infraFailed.transient++;
    } else {
      report.notRun.total++;
      if (task.notRunReason === 'cancelled') report.notRun.cancelled++;
      else report.notRun.deadline++;
    }
  }
  report.coverage = report.total === 0 ? 0 : report.scored / report.total;
  if (over > 0) report.score = { field, mean: sum / over, over, coverage: report.coverage };
  const startPhases = startPhaseStats(tasks);
  if (startPhases) report.startPhases = startPhases;

  const reasons = report.invalidReasons;
  if (report.total === 0) reasons.push('the run had no tasks');
  if (report.infraFailed.permanent > limits.maxPermanentInfra) {
    const onInfra = report.infraFailed.permanent - misdefined.length;
    if (misdefined.length > 0) {
      const named = misdefined.length > 10 ? `${misdefined.slice(0, 10).join(', ')} and ${misdefined.length - 10} more` : misdefined.join(', ');
      reasons.push(`${misdefined.length} task(s) are defined wrongly (${named}): each task's error says what to fix in it; these are not scores of the model`);
    }
    if (onInfra > 0) {
      reasons.push(
        `${onInfra} task(s) failed on permanent infrastructure (${[...permanentTypes].join(', ')}): fix the configuration; these are not scores of the model`,
      );
    }
  }
  if (report.unclassified > limits.maxUnclassified) {
    reasons.push(`${report.unclassified} task(s) ended on an unclassified error: nobody knows whose fault it was`);
  }
  if (report.unscored > limits.maxUnscored) {
    reasons.push(
      `${report.unscored} scored task(s) have no numeric "${field}" in their outcome, so the mean leaves them out: ` +
        `return { ${field}: <number> } from the trial (or set scoreField to the field it returns)`,
    );
  }
  if (report.total > 0 && report.coverage < limits.minCoverage) {
    reasons.push(
      `coverage ${report.coverage.toFixed(3)} is under ${limits.minCoverage}: only ${report.scored} of ${report.total} tasks were scored ` +
        `(${report.infraFailed.total} infrastructure failures, ${report.notRun.total} not run)`,
    );
  }
  report.valid = reasons.length === 0;
  return report;
}

import type { HarborTaskSummary } from '@berth/harbor';
import type { AttemptView } from '../job/job-data.js';

/**
 * What became of one attempt, in the six kinds a reader tells apart on the timeline. A reward of 0
 * is still 'rewarded': the sandbox and the verifier worked, the model did not.
 */
export type AttemptOutcome = 'rewarded' | 'task_failure' | 'transient_infra' | 'permanent_infra' | 'unclassified' | 'cancelled';

export interface OutcomeStyle {
  outcome: AttemptOutcome;
  label: string;
  /** The bar colour in report.html. */
  color: string;
}

/** Legend order: good news first, then the model's failures, then the infrastructure's. */
export const OUTCOME_STYLES: readonly OutcomeStyle[] = [
  { outcome: 'rewarded', label: 'rewarded', color: '#2e9e6a' },
  { outcome: 'task_failure', label: 'task failure', color: '#e8912d' },
  { outcome: 'transient_infra', label: 'transient infra', color: '#3d7fe0' },
  { outcome: 'permanent_infra', label: 'permanent infra', color: '#d9434a' },
  { outcome: 'unclassified', label: 'unclassified', color: '#8e4fc8' },
  { outcome: 'cancelled', label: 'cancelled', color: '#9aa1ab' },
];

export function outcomeLabel(outcome: AttemptOutcome): string {
  return OUTCOME_STYLES.find((s) => s.outcome === outcome)?.label ?? outcome;
}

/**
 * An attempt's outcome from its status and failure category. A category nobody knows (a newer
 * berth wrote the job) counts as unclassified rather than disappearing from the picture.
 */
export function attemptOutcome(attempt: Pick<AttemptView, 'status' | 'category'>): AttemptOutcome {
  if (attempt.status === 'outcome') return 'rewarded';
  switch (attempt.category) {
    case 'task_failure':
    case 'transient_infra':
    case 'permanent_infra':
    case 'cancelled':
      return attempt.category;
    default:
      return 'unclassified';
  }
}

/** The colour a task's final result is shown in: its chosen attempt's, or its last failure's. */
export function taskOutcome(summary: Pick<HarborTaskSummary, 'status' | 'failureCategory'>): AttemptOutcome {
  switch (summary.status) {
    case 'rewarded':
      return 'rewarded';
    case 'task_failed':
      return 'task_failure';
    case 'not_run':
      return 'cancelled';
    default:
      return attemptOutcome({ status: 'failed', ...(summary.failureCategory ? { category: summary.failureCategory } : {}) });
  }
}

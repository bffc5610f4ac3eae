import type { AttemptView } from './job-data.js';

// What varies between failures of one problem: which task, which image, which sandbox, when,
// how many. Replaced by placeholders so that 500 failures fall into the few problems they are.
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, '<url>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  [/sha256:[0-9a-f]{12,64}/gi, 'sha256:<digest>'],
  // Image references: a registry or namespace path with a tag or digest.
  [/\b[\w.-]+(?::\d+)?(?:\/[\w.-]+)+(?::[\w.-]+|@sha256:<digest>)/g, '<image>'],
  [/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, '<addr>'],
  [/\b[0-9a-f]{12,}\b/gi, '<id>'],
  [/\b\d{4}-\d{2}-\d{2}T[\d:.]+Z?\b/g, '<time>'],
  [/\b\d+(?:\.\d+)?\b/g, '<n>'],
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A failure message with what varies between occurrences replaced by placeholders; first line only. */
export function normaliseMessage(message: string, taskId?: string): string {
  let text = (message.split('\n')[0] ?? '').trim();
  // The id as a word of its own: never inside another name ("private" in the image "private-busybox").
  if (taskId) text = text.replace(new RegExp(`(?<![\\w.:@-])${escapeRegExp(taskId)}(?![\\w/:@-]|\\.\\w)`, 'g'), '<task>');
  for (const [pattern, replacement] of RULES) text = text.replace(pattern, replacement);
  return text.replace(/\s+/g, ' ').slice(0, 2000);
}

/** One problem: the failed attempts that share category, type and normalised message. */
export interface FailureGroup {
  fingerprint: string;
  category: string;
  type: string;
  pattern: string;
  /** Failed attempts in the group. */
  attempts: number;
  /** Distinct tasks with such an attempt. */
  tasks: number;
  /** Tasks for which this was the final word (their chosen task failure, or the failure that left them infra_failed / not_run). */
  finalFor: number;
  exampleTasks: string[];
  exampleMessage: string;
}

/** What a failed attempt's problem is known by: its category, type and normalised message. */
export function failureKey(a: AttemptView): { category: string; type: string; pattern: string; fingerprint: string } {
  const category = a.category ?? 'unclassified';
  const type = a.type ?? 'unknown';
  const pattern = normaliseMessage(a.message ?? '', a.taskId);
  return { category, type, pattern, fingerprint: `${category} ${type} ${pattern}` };
}

export function groupFailures(attempts: readonly AttemptView[], finalFailures: ReadonlySet<string>, examples = 3): FailureGroup[] {
  const groups = new Map<string, FailureGroup & { taskSet: Set<string> }>();
  for (const a of attempts) {
    if (a.status !== 'failed') continue;
    const { category, type, pattern, fingerprint } = failureKey(a);
    let g = groups.get(fingerprint);
    if (!g) {
      g = { fingerprint, category, type, pattern, attempts: 0, tasks: 0, finalFor: 0, exampleTasks: [], exampleMessage: a.message ?? '', taskSet: new Set() };
      groups.set(fingerprint, g);
    }
    g.attempts++;
    if (finalFailures.has(`${a.taskId}#${a.attempt}`)) g.finalFor++;
    if (!g.taskSet.has(a.taskId)) {
      g.taskSet.add(a.taskId);
      if (g.exampleTasks.length < examples) g.exampleTasks.push(a.taskId);
    }
  }
  return [...groups.values()]
    .map(({ taskSet, ...g }) => ({ ...g, tasks: taskSet.size }))
    .sort((x, y) => y.attempts - x.attempts || x.fingerprint.localeCompare(y.fingerprint));
}

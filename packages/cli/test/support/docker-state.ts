import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Containers (running or not) whose labels include all of `labels` ('key=value'), by the real engine. */
export async function containersLabelled(...labels: string[]): Promise<string[]> {
  const args = ['ps', '-aq', ...labels.flatMap((l) => ['--filter', `label=${l}`])];
  const { stdout } = await run('docker', args);
  return stdout.split('\n').filter(Boolean);
}

/**
 * The engine's own record of what happened to containers labelled `label` since `sinceMs` (epoch
 * ms): each create and destroy with the container's name, in order. A check that none is left is
 * only as good as its probe: this shows the probe's label was on containers that really existed.
 */
export async function containerLifecycle(sinceMs: number, label: string): Promise<Array<{ action: 'create' | 'destroy'; name: string }>> {
  const since = (sinceMs / 1000).toFixed(3);
  const until = (Date.now() / 1000 + 1).toFixed(3);
  const args = ['events', '--since', since, '--until', until, '--filter', 'type=container', '--filter', `label=${label}`];
  const { stdout } = await run('docker', [
    ...args,
    '--filter',
    'event=create',
    '--filter',
    'event=destroy',
    '--format',
    '{{.Action}} {{.Actor.Attributes.name}}',
  ]);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [action, name] = line.split(' ');
      return { action: action as 'create' | 'destroy', name: name ?? '' };
    });
}

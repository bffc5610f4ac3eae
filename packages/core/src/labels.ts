import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** Every resource a backend creates carries these, so sweep() can find orphans. */
export const LABEL_MANAGED = 'berth.managed';
export const LABEL_SESSION = 'berth.session';
export const LABEL_ENVIRONMENT = 'berth.environment';
export const LABEL_CREATED = 'berth.created';
/** On a snapshot image: the environment it was taken of. */
export const LABEL_SNAPSHOT_OF = 'berth.snapshot-of';
/** The PID and host of the process that created the resource: sweep spares live owners. */
export const LABEL_OWNER_PID = 'berth.owner-pid';
export const LABEL_OWNER_HOST = 'berth.owner-host';

function sessionFromEnv(): string | undefined {
  const value = process.env.BERTH_SESSION;
  // A label value: short, no spaces. Anything else is ignored rather than breaking every create.
  return value && /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(value) ? value : undefined;
}

/**
 * Groups everything this process created. One per process, unless BERTH_SESSION is set: then a
 * runner and all its child processes share it, and sweep({ session }) finds all they made.
 */
export const SESSION_ID: string = sessionFromEnv() ?? `s-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;

export function newEnvironmentId(prefix = 'berth'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/**
 * The labels of a sandbox: the spec's and the backend's own, then berth's, which always win so
 * that sweep() and the leak checks can rely on them.
 */
export function sandboxLabels(environmentId: string, ...extra: ReadonlyArray<Readonly<Record<string, string>> | undefined>): Record<string, string> {
  return {
    ...Object.assign({}, ...extra),
    [LABEL_MANAGED]: 'true',
    [LABEL_SESSION]: SESSION_ID,
    [LABEL_ENVIRONMENT]: environmentId,
    [LABEL_CREATED]: String(Date.now()),
    [LABEL_OWNER_PID]: String(process.pid),
    [LABEL_OWNER_HOST]: hostname(),
  };
}

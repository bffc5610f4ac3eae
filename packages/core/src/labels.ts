import { randomBytes } from 'node:crypto';

/** Every resource a backend creates carries these, so sweep() can find orphans. */
export const LABEL_MANAGED = 'berth.managed';
export const LABEL_SESSION = 'berth.session';
export const LABEL_ENVIRONMENT = 'berth.environment';
export const LABEL_CREATED = 'berth.created';
/** The PID and host of the process that created the resource: sweep spares live owners. */
export const LABEL_OWNER_PID = 'berth.owner-pid';
export const LABEL_OWNER_HOST = 'berth.owner-host';

/** One id per process: groups everything this process created. */
export const SESSION_ID: string = `s-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;

export function newEnvironmentId(prefix = 'berth'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

import { SERVICE_NAME, type VolumeMount } from '@berth/core';

// compose's named volumes, as berth runs them: a sandbox's own `{ type: 'volume' }` mounts,
// shared by main and the services; a host path (a bind) is the host's and refused.

type Fail = (at: string, message: string) => Error;

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The top-level `volumes:`: plain named volumes (no driver, options or external ones: those are a host's). */
export function namedVolumes(value: unknown, fail: Fail): Set<string> {
  if (value === undefined || value === null) return new Set();
  if (!isMap(value)) throw fail('volumes', 'is a mapping of volume names');
  for (const [name, config] of Object.entries(value)) {
    if (!SERVICE_NAME.test(name)) throw fail(`volumes.${name}`, 'is not a name berth can give a volume: lowercase letters, digits and "-"');
    if (config === null || config === undefined) continue;
    if (!isMap(config)) throw fail(`volumes.${name}`, 'is a mapping');
    for (const key of Object.keys(config))
      if (key !== 'name' && key !== 'labels') throw fail(`volumes.${name}.${key}`, "is not run by berth: a sandbox's volumes start empty and go with it");
  }
  return new Set(Object.keys(value));
}

/** A service's (or main's) `volumes:`: named volumes only; a host path (a bind) is refused, it is the host's. */
export function volumesOf(value: unknown, named: ReadonlySet<string>, at: string, fail: Fail): VolumeMount[] {
  if (!Array.isArray(value)) throw fail(at, 'is a list');
  return value.map((entry, i) => {
    let source: string;
    let target: string;
    let readOnly = false;
    if (typeof entry === 'string') {
      const [s, t, mode] = entry.split(':');
      source = s ?? '';
      target = t ?? '';
      readOnly = mode === 'ro';
      if (mode !== undefined && mode !== 'ro' && mode !== 'rw') throw fail(`${at}[${i}]`, `has the mode ${mode}: ro or rw`);
    } else if (isMap(entry)) {
      if (entry.type !== undefined && entry.type !== 'volume')
        throw fail(`${at}[${i}].type`, `is ${String(entry.type)}: berth runs named volumes only (a bind is a path of the host)`);
      source = String(entry.source ?? '');
      target = String(entry.target ?? '');
      readOnly = entry.read_only === true;
    } else throw fail(`${at}[${i}]`, 'is "name:/path[:ro]" or { type: volume, source, target, read_only? }');
    if (!named.has(source)) {
      const hostPath = source === '' || source.startsWith('.') || source.startsWith('/') || source.startsWith('~');
      throw fail(
        `${at}[${i}]`,
        `(${JSON.stringify(entry)}) ${hostPath ? 'mounts a path of the host, which berth does not run: copy the files in with the image, or share a named volume' : `names the volume ${source}, which the top-level volumes do not declare`}`,
      );
    }
    if (!target.startsWith('/')) throw fail(`${at}[${i}]`, 'has no absolute target path');
    return { type: 'volume' as const, name: source, target, readOnly };
  });
}

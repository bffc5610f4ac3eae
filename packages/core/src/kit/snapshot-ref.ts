/**
 * A snapshot kept by the engine under an id of its own (a Modal image id), as an image reference
 * a spec can carry: `berth-snapshot.invalid/<backend>:<id>`. `.invalid` can never resolve, so such a
 * reference is never pulled from anywhere by mistake; the backend that made it reads the id back.
 */
const HOST = 'berth-snapshot.invalid';

/** The reference of snapshot `id` of `backend` (the id must be a valid tag: letters, digits, _ . -). */
export function snapshotRef(backend: string, id: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(id)) throw new Error(`snapshot id ${JSON.stringify(id)} cannot be an image tag`);
  return `${HOST}/${backend}:${id}`;
}

/** A reference under the snapshot host (any backend's): never to be pulled from a registry. */
export function isSnapshotHost(ref: string): boolean {
  return ref.startsWith(`${HOST}/`);
}

/** The snapshot id in `ref`, when it is a snapshot reference of `backend`. */
export function snapshotIdOf(ref: string, backend: string): string | undefined {
  const prefix = `${HOST}/${backend}:`;
  return ref.startsWith(prefix) ? ref.slice(prefix.length) : undefined;
}

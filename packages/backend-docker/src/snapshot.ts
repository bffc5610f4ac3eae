import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { SnapshotContext, SnapshotImage } from '@berth/core/backend-kit';
import { mapDaemonError, statusOf } from './docker-errors.js';
import { BACKEND } from './identity.js';

/** Where snapshots go: a local repository, never pushed (a sandbox on this engine starts from it without a pull). */
// Under the kit's snapshot host (`.invalid` never resolves): the kit never pulls such a reference.
export const SNAPSHOT_REPOSITORY = 'berth-snapshot.invalid/docker';

/** A label as a Dockerfile LABEL instruction for commit's `changes` (values quoted as JSON strings are). */
const labelChange = (key: string, value: string) => `LABEL ${JSON.stringify(key)}=${JSON.stringify(value)}`;

/**
 * `docker commit` of the sandbox's container (paused while it is read, so the filesystem is
 * consistent), tagged `berth-snapshot.invalid/docker/<environment id>:<random>` and labelled with berth's labels so
 * sweep finds one never removed. The container's config comes along (env, workdir, user); berth's
 * own create sets the command and labels of every sandbox started from it.
 */
export async function commitSnapshot(docker: Docker, containerId: string, environmentId: string, ctx: SnapshotContext): Promise<SnapshotImage> {
  const tag = randomBytes(6).toString('hex');
  const repo = `${SNAPSHOT_REPOSITORY}/${environmentId}`;
  const ref = `${repo}:${tag}`;
  const errorCtx = { operation: 'snapshot' as const, backend: BACKEND, environmentId };
  await docker.getContainer(containerId).commit({
    repo,
    tag,
    pause: true,
    comment: `berth snapshot of ${environmentId}`,
    changes: Object.entries(ctx.labels).map(([key, value]) => labelChange(key, value)),
  });
  return {
    ref,
    remove: async () => {
      try {
        // By reference and forced: the tag goes even while sandboxes started from it run (a pool's
        // idle ones too); the engine frees the layers once the last of them is removed.
        await docker.getImage(ref).remove({ force: true });
      } catch (error) {
        if (statusOf(error) === 404) return;
        throw mapDaemonError(error, errorCtx) ?? error;
      }
    },
  };
}

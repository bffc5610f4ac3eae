import type Docker from 'dockerode';
import { ConfigError, type EnvironmentSpec, type Operation } from '@berth/core';
import { IMAGE_MOUNT_NO_DIRECTORY, IMAGE_MOUNT_STAGING, imageMountCopyCommand, resolvePull, type ResolvedPull } from '@berth/core/backend-kit';
import { dockerMessage, statusOf } from './docker-errors.js';
import type { DockerBackendOptions } from './options.js';
import { IDENTITY } from './identity.js';

/** The label on an image mount's volume: the target it is mounted at. */
export const LABEL_IMAGE_MOUNT = 'berth.image-mount';

/** An image mount of the spec, its image as pulled (resolvePull's: mirrors applied, pull policy defaulted). */
export interface DockerImageMount extends ResolvedPull {
  subpath?: string;
  target: string;
}

/** The spec's image mounts, their credentials checked and mirrors applied, before any I/O. */
export function imageMountsOf(spec: EnvironmentSpec, options: DockerBackendOptions): DockerImageMount[] {
  return spec.mounts.flatMap((m) => {
    if (m.type !== 'image') return [];
    const pull = resolvePull(m.image, options, { ...IDENTITY, operation: 'config' });
    return [{ ...pull, ...(m.subpath !== undefined ? { subpath: m.subpath } : {}), target: m.target }];
  });
}

/**
 * Image mounts on an engine without a native image mount (API < 1.48; this one speaks 1.41): each is
 * a named volume, berth-labelled, filled by a helper container of the mounted image that copies the
 * directory into it (the same script as Kubernetes' init containers), then mounted read-only into
 * the sandbox. The volumes are the sandbox's: removed with it, and by sweep.
 */
export class ImageMountVolumes {
  readonly #docker: Docker;
  readonly #id: string;
  readonly #mounts: readonly DockerImageMount[];
  /** Whether a volume or helper may exist (a request to make one was sent). */
  made = false;

  constructor(docker: Docker, id: string, mounts: readonly DockerImageMount[]) {
    this.#docker = docker;
    this.#id = id;
    this.#mounts = mounts;
  }

  get mounts(): readonly DockerImageMount[] {
    return this.#mounts;
  }

  #volume(i: number): string {
    return `${this.#id}-mount-${i}`;
  }

  /** Make and fill every volume; a subpath the image lacks is a ConfigError naming that mount. */
  async fill(
    labels: Readonly<Record<string, string>>,
    signal: AbortSignal,
    ctx: { operation: Operation; backend: string; environmentId: string },
  ): Promise<void> {
    for (const [i, mount] of this.#mounts.entries()) {
      this.made = true;
      const volume = this.#volume(i);
      await this.#docker.createVolume({ Name: volume, Labels: { ...labels, [LABEL_IMAGE_MOUNT]: mount.target } });
      await this.#copy(i, mount, volume, labels, signal, ctx);
    }
  }

  async #copy(
    i: number,
    mount: DockerImageMount,
    volume: string,
    labels: Readonly<Record<string, string>>,
    signal: AbortSignal,
    ctx: { operation: Operation; backend: string; environmentId: string },
  ): Promise<void> {
    const where = `the image mount of ${mount.image.original}${mount.subpath ? ` (subpath ${mount.subpath})` : ''} at ${mount.target}`;
    const fail = (path: string, why: string, cause?: unknown) =>
      new ConfigError({ ...ctx, path, message: `${where} could not be copied: ${why} (berth copies it with the image's own /bin/sh and cp)`, cause });
    // Root, offline, the volume at the staging path: the copy needs nothing else.
    const helper = await this.#docker.createContainer({
      name: `${volume}-copy`,
      Image: mount.image.canonical,
      Entrypoint: [],
      Cmd: imageMountCopyCommand(mount.subpath),
      User: '0:0',
      Labels: { ...labels },
      NetworkDisabled: true,
      HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: volume, Target: IMAGE_MOUNT_STAGING }] },
    });
    try {
      try {
        await helper.start();
      } catch (error) {
        // The engine says 400/500 "exec: /bin/sh: no such file" for an image without a shell.
        if (statusOf(error) !== undefined && /no such file|not found|executable/i.test(dockerMessage(error)))
          throw fail(`spec.mounts.${i}.image`, dockerMessage(error), error);
        throw error;
      }
      const { StatusCode } = (await helper.wait({ abortSignal: signal })) as { StatusCode: number };
      if (StatusCode !== 0) {
        const logs = await helper.logs({ stdout: true, stderr: true, tail: 20 }).catch(() => Buffer.alloc(0));
        const said = logs
          .toString('utf8')
          .replace(/[\x00-\x08]/g, '')
          .trim()
          .slice(-500);
        throw fail(StatusCode === IMAGE_MOUNT_NO_DIRECTORY ? `spec.mounts.${i}.subpath` : `spec.mounts.${i}`, said || `exit ${StatusCode}`);
      }
    } finally {
      await helper.remove({ force: true }).catch(() => undefined);
    }
  }

  /** The sandbox's view: each volume read-only at its target. */
  settings(): Docker.MountSettings[] {
    return this.#mounts.map((m, i) => ({ Type: 'volume', Source: this.#volume(i), Target: m.target, ReadOnly: true }));
  }

  /** Remove the helpers and volumes (after the sandbox's container): gone already is fine. */
  async remove(): Promise<void> {
    if (!this.made) return;
    for (const i of this.#mounts.keys()) {
      const volume = this.#volume(i);
      await this.#docker
        .getContainer(`${volume}-copy`)
        .remove({ force: true })
        .catch((error: unknown) => {
          if (statusOf(error) !== 404) throw error;
        });
      await this.#docker
        .getVolume(volume)
        .remove()
        .catch((error: unknown) => {
          if (statusOf(error) !== 404) throw error;
        });
    }
  }
}

import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CapabilityError, type ImageBuild } from '@berth/core';
import { BACKEND } from './credentials.js';
import type { ControlPlane } from './wire/index.js';

/**
 * Modal's SDK sends a file's bytes inline up to 4 MiB (LARGE_FILE_LIMIT in modal/_utils/blob_utils.py);
 * larger ones go through its blob store, which berth does not speak yet.
 */
export const INLINE_FILE_LIMIT = 4 * 1024 * 1024;
const PUT_CONCURRENCY = 8;

export interface ContextFile {
  /** Where the builder sees it: `/` + the path relative to the context, as the SDK names context files. */
  filename: string;
  path: string;
  size: number;
  mode: number;
}

/**
 * The build context's regular files, symlinks followed to the files they name (a mount holds files
 * only, as the SDK's does); a link to a directory or to nothing is left out, as the SDK leaves it.
 * A file too big to send inline is refused by name before anything is uploaded.
 */
export async function contextFiles(build: ImageBuild, environmentId?: string): Promise<ContextFile[]> {
  const out: ContextFile[] = [];
  async function walk(dir: string, rel: string): Promise<void> {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await walk(path, childRel);
        continue;
      }
      const st = await stat(path).catch(() => undefined);
      if (!st?.isFile()) continue;
      if (st.size > INLINE_FILE_LIMIT) {
        throw new CapabilityError({
          operation: 'build',
          backend: BACKEND,
          ...(environmentId ? { environmentId } : {}),
          capability: 'imageBuild.context',
          message: `the Modal backend sends build-context files of up to ${INLINE_FILE_LIMIT} bytes (Modal's blob store, for larger ones, is not spoken yet): ${childRel} in ${build.context} is ${st.size} bytes; fetch it in a RUN step, or bake it into a base image`,
        });
      }
      out.push({ filename: `/${childRel}`, path, size: st.size, mode: st.mode & 0o7777 });
    }
  }
  await walk(build.context, '');
  return out;
}

/**
 * The build context as Modal's SDK hands it to the builder: each file put in Modal's file store by
 * its sha256 (MountPutFile), then a mount of them owned by the app (MountGetOrCreate), whose id
 * goes in the image's context_mount_id. Returns undefined when the context has no file.
 */
export async function uploadContext(
  control: ControlPlane,
  appId: string,
  build: ImageBuild,
  signal: AbortSignal,
  environmentId?: string,
): Promise<string | undefined> {
  const files = await contextFiles(build, environmentId);
  if (files.length === 0) return undefined;
  const described: Array<ContextFile & { sha256Hex: string }> = [];
  const queue = [...files];
  const sent = new Set<string>();
  async function worker(): Promise<void> {
    for (let file = queue.shift(); file; file = queue.shift()) {
      const data = await readFile(file.path);
      const sha256Hex = createHash('sha256').update(data).digest('hex');
      described.push({ ...file, sha256Hex });
      if (sent.has(sha256Hex)) continue;
      sent.add(sha256Hex);
      await control.mountPutFile(sha256Hex, data, signal);
    }
  }
  await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, files.length) }, worker));
  described.sort((a, b) => a.filename.localeCompare(b.filename));
  return control.mountForApp(appId, described, signal);
}

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { packDirectory, type PackedTree } from '../archive/pack.js';
import type { ImageBuild } from '../build-spec.js';
import { ConfigError } from '../errors.js';

/** The repository built images are tagged in; the tag is the content hash. */
export const BUILD_REPOSITORY = 'berth-build';

/** Where the ConfigErrors below point: the spec field to fix. */
const CONTEXT = 'spec.image.build.context';
const DOCKERFILE = 'spec.image.build.dockerfile';

/**
 * Check that the context is a directory holding the Dockerfile; returns the Dockerfile's text.
 * A ConfigError names the field and the path, so a wrong task layout is fixed at once.
 */
export async function readDockerfile(build: ImageBuild, ctx: { backend?: string } = {}): Promise<string> {
  const fail = (path: string, message: string, cause?: unknown) =>
    new ConfigError({ operation: 'build', path, message, ...(ctx.backend ? { backend: ctx.backend } : {}), ...(cause ? { cause } : {}) });
  const st = await lstat(build.context).catch(() => undefined);
  if (!st?.isDirectory()) throw fail(CONTEXT, `the build context ${build.context} does not exist or is not a directory`);
  const path = resolve(build.context, build.dockerfile);
  if (!path.startsWith(resolve(build.context) + sep)) throw fail(DOCKERFILE, `${build.dockerfile} is outside the build context ${build.context}`);
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw fail(DOCKERFILE, `there is no Dockerfile at ${path} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}): add one or set dockerfile`, error);
  }
}

/**
 * A content hash of everything that decides the build: every file's path, type, mode and bytes
 * (links by their target), the Dockerfile's path, the args and the target. The same context gives
 * the same hash on any machine; one changed byte gives another.
 */
export async function hashBuildContext(build: ImageBuild): Promise<string> {
  const hash = createHash('sha256');
  const field = (text: string) => hash.update(`${text.length}:${text}\n`);
  field(`dockerfile=${build.dockerfile}`);
  field(`target=${build.target ?? ''}`);
  for (const name of Object.keys(build.args).sort()) field(`arg ${name}=${build.args[name]}`);
  async function walk(dir: string, rel: string): Promise<void> {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const childRel = rel ? `${rel}/${name}` : name;
      const st = await lstat(path);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) field(`link ${childRel} ${await readlink(path)}`);
      else if (st.isDirectory()) {
        field(`dir ${childRel} ${mode}`);
        await walk(path, childRel);
      } else if (st.isFile()) {
        field(`file ${childRel} ${mode} ${st.size}`);
        await pipeline(createReadStream(path), async (chunks: AsyncIterable<Buffer>) => {
          for await (const chunk of chunks) hash.update(chunk);
        });
      }
    }
  }
  await walk(build.context, '');
  return hash.digest('hex');
}

/** The tag a build of this content gets: `berth-build:<hash>`. */
export function buildTag(contentHash: string): string {
  return `${BUILD_REPOSITORY}:${contentHash.slice(0, 40)}`;
}

/** The context as a tar stream, its entries relative to the context (as builders expect). */
export function packBuildContext(build: ImageBuild): PackedTree {
  return packDirectory(build.context, '/');
}

/**
 * The images a Dockerfile starts from (FROM lines), with ARGs declared before the first FROM
 * substituted from their defaults or the build's args; stages named earlier and `scratch` are not
 * images. For preflight: what will the build pull?
 */
export function baseImages(dockerfile: string, args: Readonly<Record<string, string>> = {}): string[] {
  const lines = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim());
  const globals: Record<string, string> = {};
  const stages = new Set<string>();
  const images: string[] = [];
  let seenFrom = false;
  for (const line of lines) {
    const arg = !seenFrom && /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?/i.exec(line);
    if (arg) {
      const [, name, value] = arg;
      globals[name!] = args[name!] ?? (value ?? '').replace(/^["']|["']$/g, '');
      continue;
    }
    const from = /^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (!from) continue;
    seenFrom = true;
    const image = from[1]!.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => globals[name] ?? args[name] ?? '');
    if (image !== 'scratch' && !stages.has(image.toLowerCase()) && !images.includes(image)) images.push(image);
    if (from[2]) stages.add(from[2].toLowerCase());
  }
  return images;
}

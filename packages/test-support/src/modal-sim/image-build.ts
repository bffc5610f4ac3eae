// An image's dockerfile_commands, built for real by the local engine's Dockerfile builder, as
// Modal's builder runs a real Dockerfile build: the base images are pulled first (with the
// image's registry secret, loopback registries only), then the whole Dockerfile is built with
// the context mount's files as its context and no network. The classic builder's log ("Step 2/5 :
// RUN make", "The command '...' returned a non-zero code: 3") is what Modal's build logs show.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { parseRef, pull, PullError, type RegistryAuth } from './pull.js';

export class BuildError extends Error {}

/** The commands' file in the build directory: a name no context file takes (the context may hold its own Dockerfile). */
const DOCKERFILE = '.berth-modal-sim.Dockerfile';

/** A Dockerfile to build: its text, and the images its stages start from (earlier stages are not pulled). */
export interface Dockerfile {
  text: string;
  bases: string[];
  /** How many instructions it has (the builder's "Step i/n"). */
  steps: number;
}

/** Checks the commands; a BuildError names what the simulator cannot build. */
export function parseDockerfile(commands: string[]): Dockerfile {
  const lines = commands
    .join('\n')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const first = lines[0];
  if (!first) throw new BuildError('no dockerfile_commands: the simulator needs at least "FROM <image>"');
  const firstFrom = /^FROM\s+(\S+)(?:\s+AS\s+\S+)?$/i.exec(first);
  if (!firstFrom || first.includes('--')) throw new BuildError(`the first command must be "FROM <image>", got ${JSON.stringify(commands[0])}`);
  const stages = new Set<string>();
  const bases: string[] = [];
  for (const line of lines) {
    const from = /^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (!from) continue;
    const ref = from[1] as string;
    if (!stages.has(ref.toLowerCase()) && ref !== 'scratch') bases.push(ref);
    if (from[2]) stages.add(from[2].toLowerCase());
  }
  return { text: `${commands.join('\n')}\n`, bases, steps: lines.length };
}

/** The files of a context mount: their names (absolute, as the SDK sends them) and bytes. */
export type ContextFiles = ReadonlyArray<{ filename: string; data: Uint8Array; mode: number }>;

export interface BuildContext {
  docker: Docker;
  imageId: string;
  /** Tag the finished image gets (the simulator removes it when it closes). */
  tag: { repo: string; tag: string };
  auth: RegistryAuth | undefined;
  labels: Record<string, string>;
  files: ContextFiles;
  buildArgs: Record<string, string>;
  log: (data: string, fd: 'FILE_DESCRIPTOR_STDOUT' | 'FILE_DESCRIPTOR_STDERR' | 'FILE_DESCRIPTOR_INFO') => void;
  signal: AbortSignal;
}

export interface Built {
  workdir?: string;
}

/** Builds the Dockerfile; throws BuildError with the text Modal would put after "failed with the exception:". */
export async function build(dockerfile: Dockerfile, ctx: BuildContext): Promise<Built> {
  const info = (line: string) => ctx.log(`${line}\n`, 'FILE_DESCRIPTOR_INFO');
  const dir = await mkdtemp(join(tmpdir(), 'berth-modal-sim-build-'));
  try {
    // The step line first, as the step-by-step builder logged it: a failed pull reads as the FROM step's.
    for (const base of dockerfile.bases) {
      info(`Step 1/${dockerfile.steps} : FROM ${base}`);
      await pull(ctx.docker, parseRef(base), ctx.auth, info, ctx.signal);
    }
    await writeFile(join(dir, DOCKERFILE), dockerfile.text);
    for (const file of ctx.files) {
      const path = join(dir, file.filename.replace(/^\/+/, ''));
      if (!path.startsWith(`${dir}/`) || path === join(dir, DOCKERFILE)) throw new BuildError(`context file ${file.filename} is outside the context`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.data, { mode: file.mode || 0o644 });
    }
    const stream = (await ctx.docker.buildImage(
      { context: dir, src: ['.'] },
      {
        t: `${ctx.tag.repo}:${ctx.tag.tag}`,
        dockerfile: DOCKERFILE,
        labels: ctx.labels,
        buildargs: ctx.buildArgs,
        networkmode: 'none', // builds get no network: nothing may leave this machine
        pull: false,
        rm: true,
        forcerm: true,
        // No layer cache: another simulator's build of the same steps would share cached layers, and
        // removing its image when it closes would pull them from under this build.
        nocache: true,
        version: '1', // the classic builder: its step lines are the ones Modal's logs show
        abortSignal: ctx.signal,
      },
    )) as Readable;
    await follow(stream, ctx);
    const inspected = (await ctx.docker.getImage(`${ctx.tag.repo}:${ctx.tag.tag}`).inspect()) as { Config?: { WorkingDir?: string } };
    info(`Built ${ctx.imageId}`);
    return inspected.Config?.WorkingDir ? { workdir: inspected.Config.WorkingDir } : {};
  } catch (error) {
    if (error instanceof BuildError || error instanceof PullError) throw new BuildError(error.message);
    if (ctx.signal.aborted) throw new BuildError('the build was cancelled: the simulator is closing');
    throw new BuildError(`the engine failed: ${(error as Error).message}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The builder's JSON lines as Modal log entries: step lines as info, the rest as the steps' output. */
async function follow(stream: Readable, ctx: BuildContext): Promise<void> {
  let pending = '';
  for await (const chunk of stream) {
    pending += String(chunk);
    let at: number;
    while ((at = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, at).trim();
      pending = pending.slice(at + 1);
      if (!line) continue;
      const event = JSON.parse(line) as { stream?: string; error?: string; errorDetail?: { message?: string } };
      const failed = event.errorDetail?.message ?? event.error;
      if (failed) throw new BuildError(failed);
      const text = event.stream ?? '';
      if (!text) continue;
      ctx.log(text, /^Step \d+\/\d+ : /.test(text) ? 'FILE_DESCRIPTOR_INFO' : 'FILE_DESCRIPTOR_STDOUT');
    }
  }
}

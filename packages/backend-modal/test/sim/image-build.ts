// An image's dockerfile_commands, run for real on the local engine: FROM pulls, RUN runs in a
// container that is then committed, ENV and WORKDIR are kept for later steps and for sandboxes.
// Anything else is refused: the simulator does not pretend to build what it cannot.
import { posix } from 'node:path';
import type Docker from 'dockerode';
import { parseRef, pull, PullError, type RegistryAuth } from './pull.js';

export type Step =
  | { kind: 'FROM'; ref: string }
  | { kind: 'RUN'; argv: string[]; text: string }
  | { kind: 'ENV'; vars: Array<[string, string]> }
  | { kind: 'WORKDIR'; path: string };

export class BuildError extends Error {}

/** Parses the commands; a BuildError names the first one the simulator cannot run. */
export function parseSteps(commands: string[]): Step[] {
  const steps: Step[] = [];
  for (const [i, raw] of commands.entries()) {
    const command = raw.replace(/\\\r?\n/g, ' ').trim();
    if (!command || command.startsWith('#')) continue;
    const m = /^(\w+)\s*([\s\S]*)$/.exec(command);
    const keyword = m?.[1]?.toUpperCase() ?? '';
    const rest = m?.[2]?.trim() ?? '';
    if (i === 0 || steps.length === 0) {
      const from = /^(\S+)(?:\s+AS\s+\S+)?$/i.exec(rest);
      if (keyword !== 'FROM' || !from || rest.startsWith('--')) throw new BuildError(`the first command must be "FROM <image>", got ${JSON.stringify(raw)}`);
      steps.push({ kind: 'FROM', ref: from[1] as string });
    } else if (keyword === 'RUN') {
      const argv = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : ['/bin/sh', '-c', rest];
      steps.push({ kind: 'RUN', argv, text: rest });
    } else if (keyword === 'ENV') {
      steps.push({ kind: 'ENV', vars: parseEnv(rest) });
    } else if (keyword === 'WORKDIR' && rest) {
      steps.push({ kind: 'WORKDIR', path: rest });
    } else {
      throw new BuildError(`${JSON.stringify(raw)} is unsupported in the simulator (it runs FROM, RUN, ENV and WORKDIR)`);
    }
  }
  if (steps.length === 0) throw new BuildError('no dockerfile_commands: the simulator needs at least "FROM <image>"');
  return steps;
}

function parseEnv(rest: string): Array<[string, string]> {
  const unquote = (v: string) => (/^".*"$/.test(v) ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v);
  const legacy = /^([^\s=]+)\s+(.*)$/.exec(rest);
  if (legacy) return [[legacy[1] as string, legacy[2] as string]];
  return [...rest.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/g)].map((m) => [m[1] as string, unquote(m[2] as string)]);
}

export interface BuildContext {
  docker: Docker;
  imageId: string;
  /** Tag the finished image gets (the simulator removes it when it closes). */
  tag: { repo: string; tag: string };
  auth: RegistryAuth | undefined;
  labels: Record<string, string>;
  log: (data: string, fd: 'FILE_DESCRIPTOR_STDOUT' | 'FILE_DESCRIPTOR_STDERR' | 'FILE_DESCRIPTOR_INFO') => void;
  signal: AbortSignal;
}

export interface Built {
  env: string[];
  workdir?: string;
}

/** Runs the steps; throws BuildError with the text Modal would put after "failed with the exception:". */
export async function build(steps: Step[], ctx: BuildContext): Promise<Built> {
  const info = (line: string) => ctx.log(`${line}\n`, 'FILE_DESCRIPTOR_INFO');
  const env: string[] = [];
  let workdir: string | undefined;
  let current = '';
  const committed: string[] = [];
  try {
    for (const [i, step] of steps.entries()) {
      info(`Step ${i + 1}/${steps.length} : ${describe(step)}`);
      if (step.kind === 'FROM') {
        const ref = parseRef(step.ref);
        await pull(ctx.docker, ref, ctx.auth, info, ctx.signal);
        current = step.ref;
      } else if (step.kind === 'ENV') {
        for (const [k, v] of step.vars) env.push(`${k}=${v}`);
      } else if (step.kind === 'WORKDIR') {
        workdir = posix.resolve(workdir ?? '/', step.path);
      } else {
        current = await run(step, current, env, workdir, ctx);
        committed.push(current);
      }
    }
    await ctx.docker.getImage(current).tag(ctx.tag);
    info(`Built ${ctx.imageId}`);
    return { env, ...(workdir ? { workdir } : {}) };
  } catch (error) {
    // Steps already committed would stay behind as untagged images.
    for (const id of committed.reverse())
      await ctx.docker
        .getImage(id)
        .remove({ force: true })
        .catch(() => undefined);
    if (error instanceof BuildError || error instanceof PullError) throw new BuildError(error.message);
    throw new BuildError(`the engine failed: ${(error as Error).message}`);
  }
}

function describe(step: Step): string {
  if (step.kind === 'FROM') return `FROM ${step.ref}`;
  if (step.kind === 'RUN') return `RUN ${step.text}`;
  if (step.kind === 'ENV') return `ENV ${step.vars.map(([k, v]) => `${k}=${v}`).join(' ')}`;
  return `WORKDIR ${step.path}`;
}

/** One RUN: a container from the current image, its output as build logs, then a commit. */
async function run(step: Extract<Step, { kind: 'RUN' }>, image: string, env: string[], workdir: string | undefined, ctx: BuildContext): Promise<string> {
  const container = await ctx.docker.createContainer({
    Image: image,
    Entrypoint: step.argv.slice(0, 1),
    Cmd: step.argv.slice(1),
    Env: env,
    ...(workdir ? { WorkingDir: workdir } : {}),
    Labels: ctx.labels,
    Tty: false,
    // Builds get no network: nothing may leave this machine.
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const out = { write: (b: Buffer) => ctx.log(b.toString('utf8'), 'FILE_DESCRIPTOR_STDOUT') };
    const err = { write: (b: Buffer) => ctx.log(b.toString('utf8'), 'FILE_DESCRIPTOR_STDERR') };
    ctx.docker.modem.demuxStream(stream, out as unknown as NodeJS.WritableStream, err as unknown as NodeJS.WritableStream);
    const ended = new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    await container.start();
    const onAbort = () => void container.kill().catch(() => undefined);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    ctx.signal.removeEventListener('abort', onAbort);
    await Promise.race([ended, new Promise((r) => setTimeout(r, 2000))]);
    if (ctx.signal.aborted) throw new BuildError('the build was cancelled: the simulator is closing');
    if (StatusCode !== 0) throw new BuildError(`The command '${step.argv.join(' ')}' returned a non-zero code: ${StatusCode}`);
    const { Id } = (await container.commit({})) as { Id: string };
    return Id;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

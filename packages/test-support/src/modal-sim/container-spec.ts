// The Docker container a sandbox runs in: its entrypoint, env (image, secrets, V2 secret_sources),
// workdir, resources, labels, and for V2 sandboxes an open stdin the simulator attaches to.
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import { networkMode } from './network.js';
import { I6PN_HOST } from './i6pn.js';
import { ATTACHABLE } from './sandbox-stdio.js';
import type { SandboxDeps, SandboxRecord } from './sandbox-record.js';

/**
 * GPU types Modal takes (its GPU docs; the type upper-cased as its client sends it). This machine
 * has no GPUs: a sandbox asking for them runs without, its GPU config recorded for tests to read.
 */
export const GPU_TYPES = new Set([
  'ANY',
  'T4',
  'L4',
  'A10',
  'A10G',
  'L40S',
  'A100',
  'A100-40GB',
  'A100-80GB',
  'RTX-PRO-6000',
  'H100',
  'H100!',
  'H200',
  'B200',
  'B200+',
]);

export function containerSpec(
  record: SandboxRecord,
  image: { image: string; env: string[]; workdir: string | undefined },
  timeoutSecs: number,
  deps: Pick<SandboxDeps, 'cpus' | 'secretEnv' | 'labels'>,
  /** Its i6pn address (i6pn.ts), which it resolves i6pn.modal.local to. */
  i6pnAddress?: string,
): Docker.ContainerCreateOptions {
  const def = record.definition;
  const args = (def.entrypoint_args ?? []) as string[];
  // Without entrypoint_args a Modal sandbox just stays up until its timeout.
  const argv = args.length > 0 ? args : ['sleep', String(timeoutSecs + 60)];
  const resources = (def.resources ?? {}) as Msg;
  const memoryMb = Number(resources.memory_mb_max ?? 0) || Number(resources.memory_mb ?? 0);
  const milliCpu = Math.min(Number(resources.milli_cpu_max ?? 0) || Number(resources.milli_cpu ?? 0), deps.cpus * 1000);
  const env = [...image.env];
  for (const s of (def.secret_ids ?? []) as string[]) for (const [k, v] of Object.entries(deps.secretEnv(s) ?? {})) env.push(`${k}=${v}`);
  env.push(...record.sourceEnv);
  const workdir = typeof def.workdir === 'string' && def.workdir ? def.workdir : image.workdir;
  return {
    Image: image.image,
    Entrypoint: argv.slice(0, 1),
    Cmd: argv.slice(1),
    Env: env,
    ...(workdir ? { WorkingDir: workdir } : {}),
    // Berth's labels last: a tag cannot overwrite them.
    Labels: { ...Object.fromEntries(record.tags.map((t) => [`modal.tag.${t.tag_name}`, t.tag_value])), ...deps.labels(record.id) },
    Tty: false,
    ...(record.version === 2 ? ATTACHABLE : {}),
    HostConfig: {
      NetworkMode: networkMode(record.network),
      ...(i6pnAddress ? { ExtraHosts: [`${I6PN_HOST}:${i6pnAddress}`] } : {}),
      ...(memoryMb > 0 ? { Memory: memoryMb * 1024 * 1024, MemorySwap: memoryMb * 1024 * 1024 } : {}),
      ...(milliCpu > 0 ? { NanoCpus: milliCpu * 1_000_000 } : {}),
    },
  };
}

import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { pack } from 'tar-stream';
import { BerthError, ConfigError } from '@berth/core';
import { BACKEND } from './identity.js';
import type { DockerBackendOptions } from './options.js';

/**
 * The image that writes allowlisted sandboxes' packet filters (egress-rules.ts): options.egressImage
 * when given; else one berth makes on first use and keeps, labelled `berth.egress` and tagged
 * `berth/egress:<key>`, the key a hash of what went in, so a changed source makes a new image and an
 * unchanged one is found again (by this process, later ones and other backend instances):
 * - an engine on this machine (Linux, its name this host's, same architecture): the image is this
 *   machine's own iptables (xtables-nft-multi or -legacy-multi, whichever `iptables` is; its
 *   extensions and the libraries they link), imported as a tar. No registry, no network: the
 *   engine's host has iptables, as dockerd itself needs it.
 * - any other engine (Docker Desktop's VM, a remote DOCKER_HOST): built by the engine from
 *   EGRESS_DOCKERFILE (Alpine's iptables), which needs the engine to reach Docker Hub and Alpine's
 *   package mirror; offline, options.egressImage is the way, and the error says so.
 */
export const EGRESS_LABEL = 'berth.egress';
export const EGRESS_REPOSITORY = 'berth/egress';
export const EGRESS_DOCKERFILE = 'FROM alpine:3.22\nRUN apk add --no-cache iptables\n';
/** Bumped when the image's layout changes, so older images are not taken for this one. */
const FORMAT = '1';

const SBIN = ['/usr/sbin', '/sbin', '/usr/bin', '/bin', '/usr/local/sbin'];
const MULTI = ['xtables-nft-multi', 'xtables-legacy-multi'];
const XTABLES_DIRS = ['/usr/lib64/xtables', '/usr/lib/xtables', '/lib/xtables', '/usr/local/lib/xtables'];

export class EgressImage {
  readonly #docker: () => Docker;
  readonly #options: DockerBackendOptions;
  #pending: Promise<string> | undefined;

  constructor(docker: () => Docker, options: DockerBackendOptions) {
    this.#docker = docker;
    this.#options = options;
  }

  /** The image's name, made first where needed; concurrent callers share one making. A failure is retried by the next call. */
  get(environmentId: string): Promise<string> {
    if (this.#options.egressImage) return Promise.resolve(this.#options.egressImage);
    this.#pending ??= this.#make().catch((error: unknown) => {
      this.#pending = undefined;
      throw BerthError.isInstance(error)
        ? error
        : new ConfigError({
            operation: 'network',
            backend: BACKEND,
            environmentId,
            path: 'options.egressImage',
            message: `berth could not make the image that writes allowlists' packet filters (${(error as Error).message}): set options.egressImage to an image with iptables-restore (e.g. FROM debian:bookworm-slim, apt-get install iptables)`,
            cause: error,
          });
    });
    return this.#pending;
  }

  async #make(): Promise<string> {
    const docker = this.#docker();
    const host = (await localEngine(docker)) ? hostIptables() : undefined;
    const key = createHash('sha256')
      .update(`${FORMAT}\0`)
      .update(host ? host.key : `dockerfile\0${EGRESS_DOCKERFILE}`)
      .digest('hex')
      .slice(0, 16);
    const name = `${EGRESS_REPOSITORY}:${key}`;
    const found = await docker
      .getImage(name)
      .inspect()
      .catch(() => undefined);
    if (found?.Config?.Labels?.[EGRESS_LABEL] === key) return name;
    if (host) await importImage(docker, host, name, key);
    else await buildImage(docker, name, key);
    return name;
  }
}

/** Is the engine this machine's own (so this machine's binaries run in its containers)? */
export async function localEngine(docker: Docker): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  const info = (await docker.info()) as { Name?: string; OSType?: string; Architecture?: string };
  const arch = { x64: 'x86_64', arm64: 'aarch64' }[process.arch as string];
  return info.OSType === 'linux' && info.Name === hostname() && info.Architecture === arch;
}

/** This machine's iptables, as files to put into an image: the multi-binary, its extensions, their libraries. */
interface HostIptables {
  binary: string;
  files: string[];
  /** What identifies them: paths, sizes and the binary's contents. */
  key: string;
}

function hostIptables(): HostIptables | undefined {
  const iptables = SBIN.map((d) => join(d, 'iptables')).find(existsSync);
  const preferred = iptables ? realpathSync(iptables).split('/').pop() : undefined;
  const names = MULTI.includes(preferred ?? '') ? [preferred!, ...MULTI.filter((m) => m !== preferred)] : MULTI;
  const binary = names.flatMap((n) => SBIN.map((d) => join(d, n))).find(existsSync);
  if (!binary) return undefined;
  const multiarch = existsSync('/usr/lib') ? readdirSync('/usr/lib').map((d) => `/usr/lib/${d}/xtables`) : [];
  const xtables = [...multiarch, ...XTABLES_DIRS].find((d) => existsSync(d) && lstatSync(d).isDirectory());
  const extensions = xtables ? readdirSync(xtables).map((f) => join(xtables, f)) : [];
  const files = [binary, ...extensions];
  const hash = createHash('sha256').update(readFileSync(binary));
  for (const f of files) hash.update(`${f}\0${lstatSync(f).size}\0`);
  return { binary, files, key: hash.digest('hex') };
}

/** The shared libraries `files` load, by one ldd (the loader included). */
async function libraries(files: readonly string[]): Promise<string[]> {
  // ldd exits non-zero when one of them is no dynamic object; what it printed still holds.
  const { stdout } = await promisify(execFile)('ldd', [...files], { maxBuffer: 16 * 1024 * 1024 }).catch((e: { stdout?: string }) => ({
    stdout: e.stdout ?? '',
  }));
  const found = new Set<string>();
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('\t')) continue;
    for (const m of line.matchAll(/(\/[^\s)]+)/g)) if (existsSync(m[1]!)) found.add(m[1]!);
  }
  return [...found];
}

/** Imports `host`'s iptables as an image: the files at their paths, `iptables-restore` beside the binary. */
async function importImage(docker: Docker, host: HostIptables, name: string, key: string): Promise<void> {
  const tar = pack();
  const dirs = new Set<string>(['run', 'etc', 'tmp']);
  const entries: { path: string; data: Buffer; mode: number }[] = [];
  for (const file of [...host.files, ...(await libraries(host.files))]) {
    // Followed: the loader and libraries are often symlinks; the image gets the files.
    const stat = statSync(file);
    if (stat.isDirectory()) continue;
    entries.push({ path: file.slice(1), data: readFileSync(file), mode: stat.mode & 0o777 });
  }
  for (const e of entries) for (let d = dirname(e.path); d !== '.'; d = dirname(d)) dirs.add(d);
  for (const d of [...dirs].sort()) tar.entry({ name: d, type: 'directory', mode: 0o755 });
  for (const e of entries) tar.entry({ name: e.path, mode: e.mode }, e.data);
  const sbin = dirname(host.binary);
  const multi = host.binary.split('/').pop()!;
  for (const link of ['iptables-restore', 'iptables', 'ip6tables-restore']) tar.entry({ name: join(sbin, link).slice(1), type: 'symlink', linkname: multi });
  tar.finalize();
  const stream = await docker.importImage(tar as unknown as NodeJS.ReadableStream, {
    repo: EGRESS_REPOSITORY,
    tag: name.split(':')[1],
    changes: [`LABEL ${EGRESS_LABEL}=${key}`, `ENV PATH=${sbin}:/usr/sbin:/usr/bin:/sbin:/bin`, 'ENTRYPOINT ["iptables-restore"]'],
  });
  await followProgress(docker, stream);
}

/** Builds EGRESS_DOCKERFILE on the engine (it pulls its base and packages). */
async function buildImage(docker: Docker, name: string, key: string): Promise<void> {
  const tar = pack();
  tar.entry({ name: 'Dockerfile' }, `${EGRESS_DOCKERFILE}LABEL ${EGRESS_LABEL}=${key}\n`);
  tar.finalize();
  const stream = await docker.buildImage(tar as unknown as NodeJS.ReadableStream, { t: name, labels: { [EGRESS_LABEL]: key } });
  await followProgress(docker, stream);
}

/** Waits for an engine stream of JSON progress lines; an `error` line is a failure. */
function followProgress(docker: Docker, stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(stream, (error: Error | null, lines: { error?: string; errorDetail?: { message?: string } }[]) => {
      const failed = error?.message ?? lines.find((l) => l.error)?.error;
      if (failed) reject(new Error(failed));
      else resolve();
    });
  });
}

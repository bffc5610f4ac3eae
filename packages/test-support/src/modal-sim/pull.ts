// Pulling a FROM image with the local engine, and failure text that carries the registry's own
// words. Only loopback registries are ever contacted: the tests must send nothing beyond
// 127.0.0.0/8, so a ref naming another registry is refused, and one naming none (Docker Hub) must
// already be in the engine.
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { engineMessage, statusCodeOf } from './util.js';

export interface ImageRef {
  /** Registry host[:port], when the ref names one. */
  host?: string;
  /** Repository path inside the registry. */
  path: string;
  /** Tag or digest. */
  reference: string;
  /** The ref as given. */
  text: string;
}

export interface RegistryAuth {
  username: string;
  password: string;
}

export class PullError extends Error {}

const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

export function parseRef(text: string): ImageRef {
  const [name, digest] = text.split('@') as [string, string | undefined];
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  const tag = colon > slash ? name.slice(colon + 1) : undefined;
  const repo = colon > slash ? name.slice(0, colon) : name;
  const first = repo.split('/')[0] ?? '';
  const hasHost = repo.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  // docker.io/x and x are the same image (Docker Hub): both may only come from the local engine.
  const host = hasHost && !DOCKER_HUB.has(first) ? first : undefined;
  return { ...(host ? { host } : {}), path: hasHost ? repo.slice(first.length + 1) : repo, reference: digest ?? tag ?? 'latest', text };
}

export function isLoopback(host: string): boolean {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] ?? '');
  return name === 'localhost' || name === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** Pulls `ref` (or finds it locally), reporting progress lines; throws PullError with Modal-like text. */
export async function pull(docker: Docker, ref: ImageRef, auth: RegistryAuth | undefined, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  if (!ref.host) {
    try {
      await docker.getImage(ref.text).inspect();
      log(`Using ${ref.text} from the local engine`);
      return;
    } catch (error) {
      if (statusCodeOf(error) !== 404) throw new PullError(engineMessage(error));
      throw new PullError(
        `pull access denied for ${ref.path}: the image is not in the local engine, and pulling from Docker Hub is unsupported in the simulator (it contacts only registries on 127.0.0.0/8)`,
      );
    }
  }
  if (!isLoopback(ref.host)) throw new PullError(`pulling from ${ref.host} is unsupported in the simulator: it contacts only registries on 127.0.0.0/8`);
  log(`Pulling ${ref.text}`);
  const authconfig = auth ? { username: auth.username, password: auth.password, serveraddress: ref.host } : undefined;
  try {
    const stream = (await docker.pull(ref.text, { ...(authconfig ? { authconfig } : {}), abortSignal: signal })) as Readable;
    let pending = '';
    for await (const chunk of stream) {
      pending += String(chunk);
      let at;
      while ((at = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, at).trim();
        pending = pending.slice(at + 1);
        if (!line) continue;
        const p = JSON.parse(line) as {
          status?: string;
          id?: string;
          progressDetail?: { current?: number };
          error?: string;
          errorDetail?: { message?: string };
        };
        // The engine reports some failures inside a stream it calls successful.
        const failed = p.errorDetail?.message ?? p.error;
        if (failed) {
          stream.destroy();
          throw new PullError(await explain(ref, auth, failed));
        }
        if (p.status && p.progressDetail?.current === undefined) log(p.id ? `${p.id}: ${p.status}` : p.status);
      }
    }
  } catch (error) {
    if (error instanceof PullError) throw error;
    if (signal.aborted) throw new PullError('the build was cancelled: the simulator is closing');
    throw new PullError(await explain(ref, auth, engineMessage(error)));
  }
}

/**
 * The engine's words alone can hide the registry's ("no basic auth credentials"): ask the
 * (loopback) registry for the manifest the same way, and quote its error code and message.
 */
async function explain(ref: ImageRef, auth: RegistryAuth | undefined, engine: string): Promise<string> {
  if (/manifest unknown|not found/i.test(engine)) return engine;
  const words = await registryWords(ref, auth);
  if (!words) return engine;
  if (/^(unauthorized|denied)/.test(words)) {
    const denied = `pull access denied for ${ref.host}/${ref.path}, repository does not exist or may require authorization: ${words}`;
    return engine.includes(words) ? denied : `${denied} (docker: ${engine})`;
  }
  return `${engine}: ${words}`;
}

async function registryWords(ref: ImageRef, auth: RegistryAuth | undefined): Promise<string | undefined> {
  try {
    const headers: Record<string, string> = {
      accept:
        'application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json',
    };
    if (auth) headers.authorization = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
    const res = await fetch(`http://${ref.host}/v2/${ref.path}/manifests/${ref.reference}`, { headers, signal: AbortSignal.timeout(5000) });
    if (res.ok) return undefined;
    const body = (await res.json()) as { errors?: Array<{ code?: string; message?: string }> };
    const first = body.errors?.[0];
    return first?.code ? `${first.code.toLowerCase()}: ${first.message ?? ''}` : undefined;
  } catch {
    return undefined;
  }
}

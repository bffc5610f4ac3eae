// MountPutFile and MountGetOrCreate as Modal serves them for a build context: files are put in a
// store by their sha256 (the bytes must hash to it), then a mount lists files of the store by name.
import { createHash } from 'node:crypto';
import type { Msg } from './codec.js';
import { Code, RpcError } from './grpc-server.js';
import { newId } from './util.js';

export interface MountedFile {
  filename: string;
  data: Uint8Array;
  mode: number;
}

export class Mounts {
  readonly #store = new Map<string, Uint8Array>();
  readonly #mounts = new Map<string, MountedFile[]>();
  /** Every MountPutFile the simulator received, for tests: its sha256 and size. */
  readonly puts: Array<{ sha256: string; bytes: number }> = [];

  putFile(req: Msg): Msg {
    const sha = String(req.sha256_hex ?? '');
    if (!/^[0-9a-f]{64}$/.test(sha)) throw new RpcError(Code.INVALID_ARGUMENT, 'sha256_hex must be 64 lower-case hex digits');
    if (req.data_blob_id) throw new RpcError(Code.UNIMPLEMENTED, 'blob uploads are unsupported in the simulator');
    const data = req.data as Uint8Array | undefined;
    if (data === undefined) return { exists: this.#store.has(sha) };
    if (createHash('sha256').update(data).digest('hex') !== sha) throw new RpcError(Code.INVALID_ARGUMENT, `the data does not hash to ${sha}`);
    this.#store.set(sha, data);
    this.puts.push({ sha256: sha, bytes: data.length });
    return { exists: true };
  }

  getOrCreate(req: Msg): Msg {
    const type = String(req.object_creation_type ?? 'OBJECT_CREATION_TYPE_UNSPECIFIED');
    if (type !== 'OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP' && type !== 'OBJECT_CREATION_TYPE_EPHEMERAL')
      throw new RpcError(Code.UNIMPLEMENTED, `mount creation type ${type} is unsupported in the simulator (it makes anonymous and ephemeral mounts)`);
    if (type === 'OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP' && !req.app_id)
      throw new RpcError(Code.INVALID_ARGUMENT, 'app_id is required for a mount owned by an app');
    const files = ((req.files ?? []) as Msg[]).map((f): MountedFile => {
      const sha = String(f.sha256_hex ?? '');
      const data = this.#store.get(sha);
      if (!data) throw new RpcError(Code.FAILED_PRECONDITION, `file ${String(f.filename)} (sha256 ${sha}) was never put (MountPutFile)`);
      return { filename: String(f.filename ?? ''), data, mode: Number(f.mode ?? 0o644) };
    });
    const id = newId('mo');
    this.#mounts.set(id, files);
    return { mount_id: id };
  }

  files(mountId: string): MountedFile[] {
    const files = this.#mounts.get(mountId);
    if (!files) throw new RpcError(Code.NOT_FOUND, `Mount ${mountId} not found`);
    return files;
  }
}

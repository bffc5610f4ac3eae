// SecretSource lists (SandboxCreateV2.secret_sources, TaskExecStart.secret_sources): each entry is
// a stored secret's id or an inline StringMap. Modal's Python SDK sends a sandbox's or an exec's
// `env` this way (and from_dict secrets), not in the older env / secret_ids fields.
import type { Msg } from './codec.js';
import { Code, RpcError } from './grpc-server.js';

export type SecretEnv = (secretId: string) => Record<string, string> | undefined;

/** KEY=value entries in order (a later source wins, as in Docker's Env); NOT_FOUND for an unknown secret. */
export function resolveSecretSources(sources: unknown, secretEnv: SecretEnv): string[] {
  const env: string[] = [];
  for (const source of (sources ?? []) as Msg[]) {
    let values: Record<string, string>;
    if (source.secret_id !== undefined) {
      const id = String(source.secret_id);
      const found = secretEnv(id);
      if (!found) throw new RpcError(Code.NOT_FOUND, `Secret ${id} not found`);
      values = found;
    } else values = (((source.env ?? {}) as Msg).contents ?? {}) as Record<string, string>;
    for (const [k, v] of Object.entries(values)) env.push(`${k}=${v}`);
  }
  return env;
}

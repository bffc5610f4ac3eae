// Secrets: named ones (added by tests, or created with CREATE_IF_MISSING) and anonymous ones made
// from a dict (EPHEMERAL, ANONYMOUS_OWNED_BY_APP). Answers carry SecretMetadata with the keys:
// Modal's Python SDK infers a registry secret's kind from metadata.keys (Image.from_registry with a
// secret fails client-side, "Registry Secret must include exactly one of …", without them).
import type { Msg } from './codec.js';
import { Code, RpcError } from './grpc-server.js';
import type { MethodTable } from './methods.js';
import { newId } from './util.js';

export interface Secret {
  id: string;
  name?: string;
  env: Record<string, string>;
}

export function secretMethods(table: MethodTable, secrets: Map<string, Secret>): void {
  table.unary(
    'SecretGetOrCreate',
    (req) => {
      const name = String(req.deployment_name ?? '');
      const type = String(req.object_creation_type ?? 'OBJECT_CREATION_TYPE_UNSPECIFIED');
      const env = (req.env_dict ?? {}) as Record<string, string>;
      let secret: Secret | undefined;
      if (type === 'OBJECT_CREATION_TYPE_EPHEMERAL' || type === 'OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP') {
        secret = { id: newId('st'), env: { ...env } };
        secrets.set(secret.id, secret);
      } else {
        if (!name) throw new RpcError(Code.INVALID_ARGUMENT, 'deployment_name is required for a named secret');
        secret = [...secrets.values()].find((s) => s.name === name);
        if (!secret && type !== 'OBJECT_CREATION_TYPE_UNSPECIFIED') {
          secret = { id: newId('st'), name, env: { ...env } };
          secrets.set(secret.id, secret);
        }
        if (!secret) throw new RpcError(Code.NOT_FOUND, `Secret '${name}' not found`);
      }
      const missing = ((req.required_keys ?? []) as string[]).filter((k) => !(k in secret.env));
      if (missing.length > 0) throw new RpcError(Code.FAILED_PRECONDITION, `Secret '${secret.name ?? secret.id}' is missing key(s): ${missing.join(', ')}`);
      return { secret_id: secret.id, metadata: metadataOf(secret) };
    },
    { idempotent: true },
  );

  table.unary('SecretGetInfo', (req) => {
    const id = String(req.secret_id ?? '');
    const secret = secrets.get(id);
    if (!secret) throw new RpcError(Code.NOT_FOUND, `Secret ${id} not found`);
    return { metadata: metadataOf(secret) };
  });
}

function metadataOf(secret: Secret): Msg {
  return { ...(secret.name ? { name: secret.name } : {}), keys: Object.keys(secret.env) };
}

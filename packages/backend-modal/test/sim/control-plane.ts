// The ModalClient service: apps, secrets, images, sandboxes and router access. Calls that create
// something are idempotent per x-idempotency-key: a retry gets the first attempt's answer.
import type { SimCodec } from './codec.js';
import type { Faults } from './faults.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import type { Images } from './images.js';
import { type Handler, MethodTable } from './methods.js';
import type { Mounts } from './mounts.js';
import type { RouterTokens } from './router-tokens.js';
import type { Sandboxes } from './sandboxes.js';
import { newId } from './util.js';

export const CONTROL_PLANE = 'modal.client.ModalClient';
const SERVICE = CONTROL_PLANE;
const RETRY_POLICY_URL = 'type.googleapis.com/modal.client.RPCRetryPolicy';

export interface Secret {
  id: string;
  name?: string;
  env: Record<string, string>;
}

export interface ControlPlaneDeps {
  codec: SimCodec;
  images: Images;
  mounts: Mounts;
  sandboxes: Sandboxes;
  tokens: RouterTokens;
  faults: Faults;
  secrets: Map<string, Secret>;
  apps: Map<string, string>;
  routerUrl: () => string;
}

export function controlPlaneMethods(deps: ControlPlaneDeps): MethodTable {
  const { images, mounts, sandboxes, faults, secrets, apps, codec } = deps;
  const table = new MethodTable(SERVICE, 'modal.client');
  const unary = (name: string, fn: Handler, idempotent = false) => table.unary(name, fn, { idempotent });

  unary(
    'AppGetOrCreate',
    (req) => {
      const name = String(req.app_name ?? '');
      if (!name) throw new RpcError(Code.INVALID_ARGUMENT, 'app_name is required');
      const key = `${String(req.environment_name ?? '')}/${name}`;
      const type = String(req.object_creation_type ?? 'OBJECT_CREATION_TYPE_UNSPECIFIED');
      const existing = apps.get(key);
      if (existing && type === 'OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS') throw new RpcError(Code.ALREADY_EXISTS, `App '${name}' already exists`);
      if (existing) return { app_id: existing };
      if (type === 'OBJECT_CREATION_TYPE_UNSPECIFIED') throw new RpcError(Code.NOT_FOUND, `App '${name}' not found`);
      const id = newId('ap');
      apps.set(key, id);
      return { app_id: id };
    },
    true,
  );

  unary(
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
      return { secret_id: secret.id };
    },
    true,
  );

  unary('MountPutFile', (req) => mounts.putFile(req));
  unary('MountGetOrCreate', (req) => mounts.getOrCreate(req), true);
  unary('ImageGetOrCreate', (req) => images.getOrCreate(req), true);

  table.stream('ImageJoinStreaming', (req, ctx, send) => images.join(req, ctx, send));

  unary(
    'SandboxCreate',
    (req) => {
      const retryAfter = faults.takeRateLimit();
      if (retryAfter !== undefined) throw rateLimited(codec, retryAfter);
      return sandboxes.create(req, faults.takeFetchSpecFailure());
    },
    true,
  );
  unary('SandboxGetTaskId', (req, ctx) => sandboxes.getTaskId(req, ctx));
  unary('SandboxWait', (req, ctx) => sandboxes.wait(req, ctx));
  unary('SandboxTerminate', (req) => sandboxes.terminate(req));
  unary('SandboxList', (req) => sandboxes.list(req));

  unary('TaskGetCommandRouterAccess', (req) => {
    const taskId = String(req.task_id ?? '');
    sandboxes.byTask(taskId);
    return { jwt: deps.tokens.issue(taskId), url: deps.routerUrl() };
  });

  return table;
}

/** RESOURCE_EXHAUSTED with Modal's retry hint: an RPCRetryPolicy inside grpc-status-details-bin. */
function rateLimited(codec: SimCodec, retryAfterSecs: number): RpcError {
  const message = 'Sandbox creation rate limit exceeded';
  const policy = codec.encode('modal.client.RPCRetryPolicy', { retry_after_secs: retryAfterSecs });
  const status = codec.encode('modal.client.RPCStatus', { code: Code.RESOURCE_EXHAUSTED, message, details: [{ type_url: RETRY_POLICY_URL, value: policy }] });
  return new RpcError(Code.RESOURCE_EXHAUSTED, message, status);
}

/** Control-plane authentication: the token pair the simulator was started with. */
export function checkToken(ctx: CallContext, tokenId: string, tokenSecret: string): void {
  if (ctx.headers['x-modal-token-id'] !== tokenId || ctx.headers['x-modal-token-secret'] !== tokenSecret) {
    throw new RpcError(Code.UNAUTHENTICATED, 'Invalid token id or secret (x-modal-token-id / x-modal-token-secret)');
  }
}

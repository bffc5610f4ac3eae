// The ModalClient service: apps, secrets (secrets.ts), images, V1 sandboxes and router access, the
// workspace RPCs (workspace.ts) and the V2 sandboxes (sandboxes-v2.ts). Calls that create
// something are idempotent per x-idempotency-key: a retry gets the first attempt's answer.
import type { SimCodec } from './codec.js';
import type { Faults } from './faults.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import type { Images } from './images.js';
import { type Handler, MethodTable } from './methods.js';
import type { Mounts } from './mounts.js';
import type { RouterTokens } from './router-tokens.js';
import type { Sandboxes } from './sandboxes.js';
import { listSandboxes } from './sandbox-list.js';
import { sandboxV2Methods, setTags } from './sandboxes-v2.js';
import { type Secret, secretMethods } from './secrets.js';
import { newId } from './util.js';
import { type WorkspaceDeps, workspaceMethods } from './workspace.js';

export const CONTROL_PLANE = 'modal.client.ModalClient';
const SERVICE = CONTROL_PLANE;
const RETRY_POLICY_URL = 'type.googleapis.com/modal.client.RPCRetryPolicy';

export type { Secret };

export interface ControlPlaneDeps extends WorkspaceDeps {
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

  secretMethods(table, secrets);

  unary('MountPutFile', (req) => mounts.putFile(req));
  unary('MountGetOrCreate', (req) => mounts.getOrCreate(req), true);
  unary('ImageGetOrCreate', (req) => images.getOrCreate(req), true);

  table.stream('ImageJoinStreaming', (req, ctx, send) => images.join(req, ctx, send));
  table.unary('ImageDelete', (req) => images.delete(req), { response: 'google.protobuf.Empty' });

  unary(
    'SandboxCreate',
    (req) => {
      const limited = faults.takeRateLimit();
      if (limited) throw rateLimited(codec, limited.retryAfterSecs);
      return sandboxes.create(req, faults.takeFetchSpecFailure());
    },
    true,
  );
  unary('SandboxGetTaskId', (req, ctx) => sandboxes.getTaskId(req, ctx, 1));
  unary('SandboxWait', (req, ctx) => sandboxes.wait(req, ctx, 1));
  unary('SandboxTerminate', (req) => sandboxes.terminate(req, 1));
  unary('SandboxList', (req) => listSandboxes(sandboxes.all(), req, [1]));
  unary('SandboxTagsGet', (req) => ({ tags: sandboxes.get(String(req.sandbox_id ?? ''), 1).tags }));
  table.unary('SandboxTagsSet', (req) => setTags(sandboxes, req.sandbox_id, req.tags, 1), { response: 'google.protobuf.Empty' });

  unary('TaskGetCommandRouterAccess', (req) => {
    const taskId = String(req.task_id ?? '');
    sandboxes.byTask(taskId, { version: 1 });
    return { jwt: deps.tokens.issue(taskId), url: deps.routerUrl() };
  });

  workspaceMethods(table, deps);
  sandboxV2Methods(table, {
    sandboxes,
    faults,
    authTokens: deps.authTokens,
    routerTokens: deps.tokens,
    routerUrl: deps.routerUrl,
    secretEnv: (id) => secrets.get(id)?.env,
    rateLimited: (secs) => rateLimited(codec, secs),
  });

  return table;
}

/** RESOURCE_EXHAUSTED, with Modal's retry hint when given: an RPCRetryPolicy inside grpc-status-details-bin. */
function rateLimited(codec: SimCodec, retryAfterSecs: number | undefined): RpcError {
  const message = 'Sandbox creation rate limit exceeded';
  if (retryAfterSecs === undefined) return new RpcError(Code.RESOURCE_EXHAUSTED, message);
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

// The V2 sandbox RPCs of the control plane, which Modal's Python SDK uses by default
// (MODAL_SANDBOX_V2, on unless a GPU, network file system or pty_info asks for V1). Every one needs
// an x-modal-auth-token from AuthTokenGet. They reuse the V1 messages (SandboxWaitV2 takes
// SandboxWaitRequest) and serve only V2 sandboxes, whose ids have another shape (sandbox-ids.ts).
import { type AuthTokens, AUTH_TOKEN_HEADER } from './auth-tokens.js';
import type { Faults } from './faults.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import type { MethodTable } from './methods.js';
import type { RouterTokens } from './router-tokens.js';
import { listSandboxes } from './sandbox-list.js';
import { resolveSecretSources, type SecretEnv } from './secret-sources.js';
import type { Sandboxes } from './sandboxes.js';

export interface SandboxV2Deps {
  sandboxes: Sandboxes;
  faults: Faults;
  authTokens: AuthTokens;
  routerTokens: RouterTokens;
  routerUrl: () => string;
  secretEnv: SecretEnv;
  /** RESOURCE_EXHAUSTED (with a retry hint if given), as SandboxCreate answers when rate limited. */
  rateLimited: (retryAfterSecs?: number) => RpcError;
}

export function sandboxV2Methods(table: MethodTable, deps: SandboxV2Deps): void {
  const { sandboxes, faults } = deps;
  const guard = (ctx: CallContext) => deps.authTokens.check(ctx.headers[AUTH_TOKEN_HEADER]);

  table.unary(
    'SandboxCreateV2',
    (req) => {
      const limited = faults.takeRateLimit();
      if (limited) throw deps.rateLimited(limited.retryAfterSecs);
      const sourceEnv = resolveSecretSources(req.secret_sources, deps.secretEnv);
      const { sandbox_id } = sandboxes.create(req, faults.takeFetchSpecFailure(), { version: 2, sourceEnv });
      return { sandbox_id, metadata: { app_id: String(req.app_id ?? '') } };
    },
    { guard, idempotent: true },
  );
  table.unary('SandboxGetTaskIdV2', (req, ctx) => sandboxes.getTaskId(req, ctx, 2), {
    guard,
    request: 'SandboxGetTaskIdRequest',
    response: 'SandboxGetTaskIdResponse',
  });
  table.unary('SandboxWaitV2', (req, ctx) => sandboxes.wait(req, ctx, 2), { guard, request: 'SandboxWaitRequest', response: 'SandboxWaitResponse' });
  table.unary('SandboxTerminateV2', (req) => sandboxes.terminate(req, 2), { guard, request: 'SandboxTerminateRequest', response: 'SandboxTerminateResponse' });
  // Lists V1 and V2 sandboxes alike (the SDK: "Lists both V1 and V2 Sandboxes").
  table.unary('SandboxListV2', (req) => listSandboxes(sandboxes.all(), req, [1, 2]), { guard, request: 'SandboxListRequest', response: 'SandboxListResponse' });
  table.unary('SandboxTagsGetV2', (req) => ({ tags: sandboxes.get(String(req.sandbox_id ?? ''), 2).tags }), {
    guard,
    request: 'SandboxTagsGetRequest',
    response: 'SandboxTagsGetResponse',
  });
  table.unary('SandboxTagsSetV2', (req) => setTags(sandboxes, req.sandbox_id, req.tags, 2), {
    guard,
    request: 'SandboxTagsSetRequest',
    response: 'google.protobuf.Empty',
  });

  // By sandbox or by task. An ended sandbox still gets access: its output stays readable.
  table.unary(
    'SandboxGetCommandRouterAccess',
    (req) => {
      const taskId =
        req.task_id !== undefined
          ? sandboxes.byTask(String(req.task_id), { ended: true, version: 2 }).taskId
          : sandboxes.get(String(req.sandbox_id ?? ''), 2).taskId;
      if (!taskId) throw new RpcError(Code.FAILED_PRECONDITION, `Sandbox ${String(req.sandbox_id)} has no task yet (SandboxGetTaskIdV2 says when it has)`);
      return { jwt: deps.routerTokens.issue(taskId), url: deps.routerUrl() };
    },
    { guard },
  );
}

/** SandboxTagsSet(V2): the tags given replace all of the sandbox's tags. */
export function setTags(sandboxes: Sandboxes, sandboxId: unknown, tags: unknown, version: 1 | 2): Record<string, never> {
  const record = sandboxes.get(String(sandboxId ?? ''), version);
  record.tags = ((tags ?? []) as Array<Record<string, unknown>>).map((t) => ({ tag_name: String(t.tag_name ?? ''), tag_value: String(t.tag_value ?? '') }));
  return {};
}

// Modal's sandbox RPCs as berth uses them, in the two generations Modal serves. V2 (SandboxCreateV2,
// SandboxGetTaskIdV2, SandboxGetCommandRouterAccess, SandboxWaitV2, SandboxTerminateV2,
// SandboxListV2) is what Modal's Python SDK 1.6.4 uses by default, with an x-modal-auth-token on
// every call. V1 stays for what the SDK itself still sends on V1: a sandbox with a GPU (the SDK
// chooses V1 when `gpu` is given, sandbox/_sandbox.py:72-80), and as a switch
// (options.sandboxApi: 'v1'). Which generation serves an existing sandbox is read from its id, as
// the SDK does: V1 and V2 RPCs refuse each other's sandboxes.
import type { ControlPlane, GenericResult, SandboxDefinition, SandboxInfo } from './modal-api.js';
import type { RouterAccess } from './router-api.js';

export type SandboxApiVersion = 1 | 2;

/** The SDK's rule (sandbox/_common.py `_is_v1_sandbox_id`): `sb-` and exactly 22 letters or digits is V1; any other id is V2. */
export function sandboxApiVersion(sandboxId: string): SandboxApiVersion {
  return /^sb-[0-9A-Za-z]{22}$/.test(sandboxId) ? 1 : 2;
}

/** How often a V2 sandbox is asked for its task: the SDK's interval (_impl_v2.py, _common.py:327). */
export const TASK_ID_POLL_MS = 500;

export interface SandboxCreation {
  appId: string;
  definition: SandboxDefinition;
  tags: Record<string, string>;
  /**
   * The sandbox's environment variables. V2 sends them inline in secret_sources [{env}], as the SDK
   * sends `env=`; V1 has no such field, so they become an ephemeral secret first (`ephemeralSecret`).
   */
  env: Record<string, string>;
  environmentName?: string;
}

export interface CreatedSandbox {
  sandboxId: string;
  /** When Modal already placed it (V2 may say so in the create's answer). */
  taskId?: string;
  /** The router's first access, when the create's answer carries it. */
  routerAccess?: RouterAccess;
}

/**
 * Sends a sandbox's create again while Modal rate-limits it. Given to `create`, the create's
 * RESOURCE_EXHAUSTED reaches it at once (it reports the throttling, waits, sends again); without
 * one, a rate limit is waited out like any call's (calls.ts). Each send is a call of its own, with
 * its own idempotency key: a create refused with RESOURCE_EXHAUSTED made nothing.
 */
export type CreateRetry = <T>(send: () => Promise<T>) => Promise<T>;

/** The metadata key a V2 sandbox's own token goes back in, when SandboxCreateV2 gave one (the SDK: _impl_v2.py:112,231). */
export const SANDBOX_TOKEN_HEADER = 'x-modal-sandbox-token';

const tagList = (tags: Record<string, string>) => Object.entries(tags).map(([tag_name, tag_value]) => ({ tag_name, tag_value }));

export class SandboxRpcs {
  readonly #control: ControlPlane;
  /** Which generation lists sandboxes (the sweep). V2's list holds V1 and V2 sandboxes alike. */
  readonly #listVersion: SandboxApiVersion;
  /** sandbox_token of the V2 sandboxes this process made, sent back on their calls as the SDK does. A credential: never logged. */
  readonly #sandboxTokens = new Map<string, string>();

  constructor(control: ControlPlane, listVersion: SandboxApiVersion = 2) {
    this.#control = control;
    this.#listVersion = listVersion;
  }

  async create(version: SandboxApiVersion, c: SandboxCreation, signal?: AbortSignal, retry?: CreateRetry): Promise<CreatedSandbox> {
    const send: CreateRetry = retry ?? ((call) => call());
    const rateLimits = retry ? 'caller' : 'retry';
    if (version === 1) {
      const secretIds = Object.keys(c.env).length ? [await this.#control.ephemeralSecret(c.appId, c.env, c.environmentName, signal)] : [];
      const definition = { ...c.definition, secret_ids: [...(c.definition.secret_ids ?? []), ...secretIds] };
      const res = await send(() =>
        this.#control.call('SandboxCreate', 'SandboxCreateRequest', { app_id: c.appId, definition, tags: tagList(c.tags) }, 'SandboxCreateResponse', {
          ...(signal ? { signal } : {}),
          rateLimits,
        }),
      );
      return { sandboxId: res.sandbox_id ?? '' };
    }
    const res = await send(() =>
      this.#control.call(
        'SandboxCreateV2',
        'SandboxCreateV2Request',
        {
          app_id: c.appId,
          definition: c.definition,
          tags: tagList(c.tags),
          ...(Object.keys(c.env).length ? { secret_sources: [{ env: { contents: c.env } }] } : {}),
        },
        'SandboxCreateV2Response',
        { ...(signal ? { signal } : {}), auth: true, rateLimits },
      ),
    );
    const access = res.command_router_access;
    if (res.sandbox_id && res.sandbox_token) this.#sandboxTokens.set(res.sandbox_id, res.sandbox_token);
    return {
      sandboxId: res.sandbox_id ?? '',
      ...(res.task_id ? { taskId: res.task_id } : {}),
      ...(access?.jwt && access.url ? { routerAccess: { jwt: access.jwt, url: access.url } } : {}),
    };
  }

  /**
   * The task id once the sandbox runs; its result instead if it already ended. V1 is a long-poll
   * held up to timeoutSecs. V2 answers at once: the SDK sends neither timeout nor wait_until_ready
   * on SandboxGetTaskIdV2, so whether Modal holds a V2 call is unknown, and the caller polls.
   */
  async taskId(sandboxId: string, timeoutSecs: number, signal?: AbortSignal): Promise<{ taskId?: string; result?: GenericResult }> {
    const v1 = sandboxApiVersion(sandboxId) === 1;
    const res = await this.#control.call(
      v1 ? 'SandboxGetTaskId' : 'SandboxGetTaskIdV2',
      'SandboxGetTaskIdRequest',
      v1 ? { sandbox_id: sandboxId, timeout: timeoutSecs, wait_until_ready: true } : { sandbox_id: sandboxId },
      'SandboxGetTaskIdResponse',
      { ...(signal ? { signal } : {}), ...(v1 ? { idleTimeoutMs: (timeoutSecs + 30) * 1000 } : { auth: true, ...this.#tokenOf(sandboxId) }) },
    );
    return { ...(res.task_id ? { taskId: res.task_id } : {}), ...(res.task_result?.status ? { result: res.task_result } : {}) };
  }

  /** The sandbox's result once it ended; undefined while it runs. Held up to timeoutSecs. */
  async wait(sandboxId: string, timeoutSecs: number, signal?: AbortSignal): Promise<GenericResult | undefined> {
    const v1 = sandboxApiVersion(sandboxId) === 1;
    const res = await this.#control.call(
      v1 ? 'SandboxWait' : 'SandboxWaitV2',
      'SandboxWaitRequest',
      { sandbox_id: sandboxId, timeout: timeoutSecs },
      'SandboxWaitResponse',
      { ...(signal ? { signal } : {}), idleTimeoutMs: (timeoutSecs + 30) * 1000, auth: !v1, ...this.#tokenOf(sandboxId) },
    );
    return res.result?.status ? res.result : undefined;
  }

  async terminate(sandboxId: string, signal?: AbortSignal): Promise<void> {
    const v1 = sandboxApiVersion(sandboxId) === 1;
    await this.#control.call(v1 ? 'SandboxTerminate' : 'SandboxTerminateV2', 'SandboxTerminateRequest', { sandbox_id: sandboxId }, 'SandboxTerminateResponse', {
      ...(signal ? { signal } : {}),
      auth: !v1,
      ...this.#tokenOf(sandboxId),
    });
    this.#sandboxTokens.delete(sandboxId);
  }

  /** Sandboxes of the app that carry every tag given (running ones: include_finished is left false, as the SDK does). */
  async list(appId: string, tags: Record<string, string>, signal?: AbortSignal): Promise<SandboxInfo[]> {
    const v1 = this.#listVersion === 1;
    const res = await this.#control.call(
      v1 ? 'SandboxList' : 'SandboxListV2',
      'SandboxListRequest',
      { app_id: appId, tags: tagList(tags) },
      'SandboxListResponse',
      { ...(signal ? { signal } : {}), auth: !v1 },
    );
    return [...(res.sandboxes ?? [])];
  }

  /** The router's URL and JWT for the sandbox's task: by sandbox on V2 (as the SDK asks), by task on V1. */
  async routerAccess(sandboxId: string, taskId: string, signal?: AbortSignal): Promise<RouterAccess> {
    if (sandboxApiVersion(sandboxId) === 1) {
      const res = await this.#control.call(
        'TaskGetCommandRouterAccess',
        'TaskGetCommandRouterAccessRequest',
        { task_id: taskId },
        'TaskGetCommandRouterAccessResponse',
        signal ? { signal } : {},
      );
      return { jwt: res.jwt ?? '', url: res.url ?? '' };
    }
    const res = await this.#control.call(
      'SandboxGetCommandRouterAccess',
      'SandboxGetCommandRouterAccessRequest',
      { sandbox_id: sandboxId },
      'SandboxGetCommandRouterAccessResponse',
      { ...(signal ? { signal } : {}), auth: true, ...this.#tokenOf(sandboxId) },
    );
    return { jwt: res.jwt ?? '', url: res.url ?? '' };
  }

  /** The x-modal-sandbox-token metadata for a V2 sandbox that has one. */
  #tokenOf(sandboxId: string): { metadata?: Record<string, string> } {
    const token = this.#sandboxTokens.get(sandboxId);
    return token ? { metadata: { [SANDBOX_TOKEN_HEADER]: token } } : {};
  }
}

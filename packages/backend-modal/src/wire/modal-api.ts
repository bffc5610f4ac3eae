// Modal's control plane as berth uses it: one method per RPC, in berth's words. Everything that
// knows an RPC's name or a message's shape is in src/wire/, so a change in Modal's protocol is a
// change here.
import { AUTH_TOKEN_HEADER, AuthTokenManager } from './auth-token.js';
import { GRPC_CODE, GrpcError } from './grpc-status.js';
import { SCHEMA, type EnumValue, type MessageName, type MessageValue } from './schema.js';
import { RpcCaller, type CallContext, type RetryPolicy } from './calls.js';
import type { GrpcEndpoint, GrpcTransport } from './grpc.js';

export type GenericResult = MessageValue<'GenericResult'>;
export type SandboxDefinition = MessageValue<'Sandbox'>;
export type SandboxInfo = MessageValue<'SandboxInfo'>;
export type RegistryAuthType = 'REGISTRY_AUTH_TYPE_AWS' | 'REGISTRY_AUTH_TYPE_GCP' | 'REGISTRY_AUTH_TYPE_PUBLIC' | 'REGISTRY_AUTH_TYPE_STATIC_CREDS';

/** Long-polls: what berth asks the server to hold, and how long a silent connection may last beyond it. */
export const LONG_POLL_SECS = 55;
const LONG_POLL_IDLE_MS = (LONG_POLL_SECS + 30) * 1000;

/** Modal's ClientType: a name of the enum (CLIENT_TYPE_CLIENT) or its number. */
export type ClientType = EnumValue<'ClientType'>;

/** A ClientType's number, or undefined when the name is not one of the enum's. */
export function clientTypeNumber(type: ClientType | string): number | undefined {
  if (typeof type === 'number') return type;
  const values: Record<string, number> = SCHEMA.ClientType.enum;
  return Object.hasOwn(values, type) ? values[type] : undefined;
}

/** The ClientType names Modal's protocol has, for messages. */
export const CLIENT_TYPE_NAMES: readonly string[] = Object.keys(SCHEMA.ClientType.enum);

export interface ControlPlaneConfig {
  endpoint: GrpcEndpoint;
  tokenId: string;
  tokenSecret: string;
  /** Sent as x-modal-client-version: the version of Modal's client whose protocol berth speaks. */
  clientVersion: string;
  /** Sent as x-modal-client-type (its number). */
  clientType: number;
  retry?: RetryPolicy;
}

export interface ImageBuildUpdate {
  logs: string[];
  entryId?: string;
  result?: GenericResult;
}

/** The control plane (modal.client.ModalClient). */
export class ControlPlane {
  readonly #rpc: RpcCaller;
  readonly #config: ControlPlaneConfig;
  /** The x-modal-auth-token of V2 calls: fetched on first need, cached and refreshed (auth-token.ts). */
  readonly authToken: AuthTokenManager;

  constructor(transport: GrpcTransport, config: ControlPlaneConfig) {
    this.#rpc = new RpcCaller(transport, 'modal.client.ModalClient', config.retry);
    this.#config = config;
    this.authToken = new AuthTokenManager((signal) => this.#authTokenGet(signal));
  }

  #ctx(signal?: AbortSignal, idleTimeoutMs?: number): CallContext {
    const metadata = {
      'x-modal-token-id': this.#config.tokenId,
      'x-modal-token-secret': this.#config.tokenSecret,
      'x-modal-client-type': String(this.#config.clientType),
      'x-modal-client-version': this.#config.clientVersion,
    };
    return { endpoint: this.#config.endpoint, metadata: async () => metadata, ...(signal ? { signal } : {}), ...(idleTimeoutMs ? { idleTimeoutMs } : {}) };
  }

  async appGetOrCreate(appName: string, environmentName: string | undefined, create: boolean, signal?: AbortSignal): Promise<string> {
    const res = await this.#rpc.unary(
      'AppGetOrCreate',
      'AppGetOrCreateRequest',
      {
        app_name: appName,
        ...(environmentName ? { environment_name: environmentName } : {}),
        object_creation_type: create ? 'OBJECT_CREATION_TYPE_CREATE_IF_MISSING' : 'OBJECT_CREATION_TYPE_UNSPECIFIED',
      },
      'AppGetOrCreateResponse',
      this.#ctx(signal),
    );
    return res.app_id ?? '';
  }

  /** Credentials given inline become an ephemeral secret (never stored under a name). */
  async ephemeralSecret(appId: string, env: Record<string, string>, environmentName?: string, signal?: AbortSignal): Promise<string> {
    const res = await this.#rpc.unary(
      'SecretGetOrCreate',
      'SecretGetOrCreateRequest',
      {
        object_creation_type: 'OBJECT_CREATION_TYPE_EPHEMERAL',
        env_dict: env,
        app_id: appId,
        ...(environmentName ? { environment_name: environmentName } : {}),
      },
      'SecretGetOrCreateResponse',
      this.#ctx(signal),
    );
    return res.secret_id ?? '';
  }

  /** A named secret of the workspace; FAILED_PRECONDITION when it lacks a required key. */
  async namedSecret(name: string, requiredKeys: readonly string[], environmentName?: string, signal?: AbortSignal): Promise<string> {
    const res = await this.#rpc.unary(
      'SecretGetOrCreate',
      'SecretGetOrCreateRequest',
      { deployment_name: name, required_keys: [...requiredKeys], ...(environmentName ? { environment_name: environmentName } : {}) },
      'SecretGetOrCreateResponse',
      this.#ctx(signal),
    );
    return res.secret_id ?? '';
  }

  async imageGetOrCreate(
    appId: string,
    commands: readonly string[],
    registry: { authType: RegistryAuthType; secretId?: string } | undefined,
    signal?: AbortSignal,
    buildArgs?: Record<string, string>,
    contextMountId?: string,
  ): Promise<{ imageId: string; result?: GenericResult }> {
    const res = await this.#rpc.unary(
      'ImageGetOrCreate',
      'ImageGetOrCreateRequest',
      {
        app_id: appId,
        image: {
          dockerfile_commands: [...commands],
          ...(buildArgs && Object.keys(buildArgs).length ? { build_args: buildArgs } : {}),
          ...(contextMountId ? { context_mount_id: contextMountId } : {}),
          ...(registry
            ? { image_registry_config: { registry_auth_type: registry.authType, ...(registry.secretId ? { secret_id: registry.secretId } : {}) } }
            : {}),
        },
        builder_version: '2025.06',
      },
      'ImageGetOrCreateResponse',
      this.#ctx(signal),
    );
    return { imageId: res.image_id ?? '', ...(res.result?.status ? { result: res.result } : {}) };
  }

  /** Put one file's bytes in Modal's file store, by its sha256; `exists` says the store has them now. */
  async mountPutFile(sha256Hex: string, data: Uint8Array | undefined, signal?: AbortSignal): Promise<boolean> {
    const res = await this.#rpc.unary(
      'MountPutFile',
      'MountPutFileRequest',
      { sha256_hex: sha256Hex, ...(data ? { data } : {}) },
      'MountPutFileResponse',
      this.#ctx(signal),
    );
    return res.exists === true;
  }

  /** A mount owned by the app, of files already in the store (mountPutFile), as Modal's SDK makes a build context. */
  async mountForApp(
    appId: string,
    files: ReadonlyArray<{ filename: string; sha256Hex: string; size: number; mode: number }>,
    signal?: AbortSignal,
  ): Promise<string> {
    const res = await this.#rpc.unary(
      'MountGetOrCreate',
      'MountGetOrCreateRequest',
      {
        object_creation_type: 'OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP',
        app_id: appId,
        files: files.map((f) => ({ filename: f.filename, sha256_hex: f.sha256Hex, size: f.size, mode: f.mode })),
      },
      'MountGetOrCreateResponse',
      this.#ctx(signal),
    );
    return res.mount_id ?? '';
  }

  /** One long-poll of a build: its log lines since `lastEntryId`, and its result once it has one. */
  async *imageJoin(imageId: string, lastEntryId: string | undefined, signal?: AbortSignal): AsyncGenerator<ImageBuildUpdate> {
    const request = { image_id: imageId, timeout: LONG_POLL_SECS, ...(lastEntryId ? { last_entry_id: lastEntryId } : {}), include_logs_for_finished: true };
    for await (const res of this.#rpc.stream(
      'ImageJoinStreaming',
      'ImageJoinStreamingRequest',
      request,
      'ImageJoinStreamingResponse',
      this.#ctx(signal, LONG_POLL_IDLE_MS),
    )) {
      yield {
        logs: (res.task_logs ?? []).map((l) => (l as { data?: string }).data ?? '').filter((d) => d.length > 0),
        ...(res.entry_id ? { entryId: res.entry_id } : {}),
        ...(res.result?.status ? { result: res.result } : {}),
      };
    }
  }

  /** ImageDelete: the image (a snapshot) is gone; one already gone is fine (NOT_FOUND). */
  async imageDelete(imageId: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.call('ImageDelete', 'ImageDeleteRequest', { image_id: imageId }, 'Empty', { ...(signal ? { signal } : {}), auth: true });
    } catch (error) {
      if (GrpcError.isInstance(error) && error.code === GRPC_CODE.NOT_FOUND) return;
      throw error;
    }
  }

  /**
   * One unary call of the control plane, for the RPC modules beside this one (sandbox-rpcs.ts).
   * `auth` adds the x-modal-auth-token V2 RPCs require; a call it is refused on (UNAUTHENTICATED)
   * is made once more with a new token, since the server may have revoked the cached one early.
   * `rateLimits: 'caller'` throws RESOURCE_EXHAUSTED at once instead of waiting it out (calls.ts).
   */
  async call<Req extends MessageName, Res extends MessageName>(
    method: string,
    request: Req,
    value: MessageValue<Req>,
    response: Res,
    opts: { signal?: AbortSignal; idleTimeoutMs?: number; auth?: boolean; metadata?: Record<string, string>; rateLimits?: CallContext['rateLimits'] } = {},
  ): Promise<MessageValue<Res>> {
    const base: CallContext = { ...this.#ctx(opts.signal, opts.idleTimeoutMs), ...(opts.rateLimits ? { rateLimits: opts.rateLimits } : {}) };
    const extra = opts.metadata;
    const ctx: CallContext = extra ? { ...base, metadata: async () => ({ ...(await base.metadata()), ...extra }) } : base;
    if (!opts.auth) return this.#rpc.unary(method, request, value, response, ctx);
    let sent: string | undefined;
    const withToken: CallContext = {
      ...ctx,
      metadata: async () => {
        sent = await this.authToken.get(opts.signal);
        return { ...(await ctx.metadata()), [AUTH_TOKEN_HEADER]: sent };
      },
    };
    try {
      return await this.#rpc.unary(method, request, value, response, withToken);
    } catch (error) {
      if (!(GrpcError.isInstance(error) && error.code === GRPC_CODE.UNAUTHENTICATED && sent !== undefined)) throw error;
      this.authToken.invalidate(sent);
      return this.#rpc.unary(method, request, value, response, withToken);
    }
  }

  /** AuthTokenGet: sent with the token id and secret only (the SDK sends no auth token on it either). */
  async #authTokenGet(signal?: AbortSignal): Promise<string> {
    const res = await this.#rpc.unary('AuthTokenGet', 'AuthTokenGetRequest', {}, 'AuthTokenGetResponse', this.#ctx(signal));
    if (!res.token) throw new Error('Modal answered AuthTokenGet without a token: the V2 sandbox RPCs cannot be called');
    return res.token;
  }
}

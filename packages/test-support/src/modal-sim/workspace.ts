// What a client asks of the workspace before any object: its environment (the Python SDK reads the
// image builder version from it before every image build), the auth token V2 RPCs need, and
// ClientHello (only `modal token new/set` calls it; the default path does not).
import type { AuthTokens } from './auth-tokens.js';
import { Code, RpcError } from './grpc-server.js';
import type { MethodTable } from './methods.js';
import { newId } from './util.js';

/** The environment a client gets when it names none, as on a new Modal workspace. */
export const DEFAULT_ENVIRONMENT = 'main';

export interface WorkspaceDeps {
  authTokens: AuthTokens;
  /** EnvironmentSettings.image_builder_version: one the SDK accepts (2023.12 … 2025.06, PREVIEW). */
  imageBuilderVersion: () => string;
}

export function workspaceMethods(table: MethodTable, deps: WorkspaceDeps): void {
  const environments = new Map<string, string>([[DEFAULT_ENVIRONMENT, newId('en')]]);

  table.unary('EnvironmentGetOrCreate', (req) => {
    const name = String(req.deployment_name ?? '') || DEFAULT_ENVIRONMENT;
    const type = String(req.object_creation_type ?? 'OBJECT_CREATION_TYPE_UNSPECIFIED');
    let id = environments.get(name);
    if (id && type === 'OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS') throw new RpcError(Code.ALREADY_EXISTS, `Environment '${name}' already exists`);
    if (!id && type !== 'OBJECT_CREATION_TYPE_CREATE_IF_MISSING' && type !== 'OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS')
      throw new RpcError(Code.NOT_FOUND, `Environment '${name}' not found`);
    if (!id) environments.set(name, (id = newId('en')));
    return { environment_id: id, metadata: { name, settings: { image_builder_version: deps.imageBuilderVersion(), webhook_suffix: '' } } };
  });

  table.unary('AuthTokenGet', () => ({ token: deps.authTokens.issue() }));

  table.unary('ClientHello', () => ({ image_builder_version: deps.imageBuilderVersion() }), { request: 'google.protobuf.Empty' });
}

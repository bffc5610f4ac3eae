// The wire layer: the only code that knows Modal's protocol (RPC names, message shapes, gRPC over
// HTTP/2). The rest of the backend talks to it through these names.
export { GrpcTransport, SERVER_WARNING_HEADER, type GrpcEndpoint, type GrpcTransportOptions } from './grpc.js';
export { GRPC_CODE, GrpcError, type GrpcCodeName } from './grpc-status.js';
export {
  CLIENT_TYPE_NAMES,
  ControlPlane,
  LONG_POLL_SECS,
  clientTypeNumber,
  type ClientType,
  type ControlPlaneConfig,
  type GenericResult,
  type ImageBuildUpdate,
  type RegistryAuthType,
  type SandboxDefinition,
  type SandboxInfo,
} from './modal-api.js';
export { TaskRouter, type ExecExit, type ExecStart, type NetworkAccess, type RouterAccess } from './router-api.js';
export { AUTH_TOKEN_HEADER, AuthTokenManager, jwtExpiryMs } from './auth-token.js';
export {
  SandboxRpcs,
  TASK_ID_POLL_MS,
  sandboxApiVersion,
  type CreateRetry,
  type CreatedSandbox,
  type SandboxApiVersion,
  type SandboxCreation,
} from './sandbox-rpcs.js';
export { DEFAULT_RETRY, type RetryPolicy } from './calls.js';

/**
 * berth as a long-lived process for clients in other languages: `serve()` answers JSON-RPC 2.0,
 * one message a line (the CLI's `berth serve --stdio`). The protocol is in protocol.ts and the
 * package README.
 */
export { serve, type ServeOptions } from './server.js';
export type { SessionOptions } from './session.js';
export {
  ERROR_CODES,
  PROTOCOL_VERSION,
  type BerthErrorData,
  type CancelParams,
  type MethodName,
  type Methods,
  type OutputParams,
  type RequestId,
  type RpcError,
  type RpcNotification,
  type RpcRequest,
  type RpcResponse,
} from './protocol.js';

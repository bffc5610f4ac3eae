// V1 and V2 sandbox ids. Modal's Python SDK picks the RPC family from the id's shape alone
// (sandbox/_common.py, _is_v1_sandbox_id): `sb-` and exactly 22 alphanumerics is V1, anything else
// is V2 ("IDs minted in newer formats route to the newer backend"). So a V2 sandbox must get an id
// of another shape, or the SDK's Sandbox.from_id and Sandbox.list would drive it with V1 RPCs. The
// simulator uses `sb-` and 26 alphanumerics; real Modal's V2 format is not documented.
//
// The two families are separate backends on Modal, so each family of RPCs knows only its own
// sandboxes: a V1 RPC (SandboxWait) given a V2 id answers NOT_FOUND, and the reverse. (SandboxListV2
// lists both, as the SDK says; SandboxList lists V1 only.) Modal's exact answer to a mixed-up call
// is not documented; NOT_FOUND is what a backend that never saw the id would say.
import { Code, RpcError } from './grpc-server.js';
import { newId } from './util.js';

export type SandboxVersion = 1 | 2;

const V1_SHAPE = /^sb-[0-9A-Za-z]{22}$/;

export function newSandboxId(version: SandboxVersion): string {
  return newId('sb', version === 1 ? 22 : 26);
}

/** The SDK's rule, for tests and checks. */
export function sandboxVersionOf(id: string): SandboxVersion {
  return V1_SHAPE.test(id) ? 1 : 2;
}

export function notFound(id: string, actual: SandboxVersion): RpcError {
  const other = actual === 1 ? 'V1 RPCs (SandboxWait, ...)' : 'V2 RPCs (SandboxWaitV2, ...)';
  return new RpcError(Code.NOT_FOUND, `Sandbox ${id} not found (it is a V${actual} sandbox: the ${other} serve it)`);
}

// The client's identity as Modal's SDKs send it (x-modal-client-type, x-modal-client-version), and
// the two answers Modal gives an old client: refusal, FAILED_PRECONDITION with the text Modal's
// SDKs before 0.68 turned into VersionError (1.x turns any FAILED_PRECONDITION into ConflictError),
// and a warning, in the x-modal-warning trailer of any response (percent-encoded, shown by the SDK
// as a ServerWarning).
import { Code, type CallContext, RpcError } from './grpc-server.js';

export const WARNING_TRAILER = 'x-modal-warning';

export interface ClientVersionPolicy {
  /** Older clients (and ones that send no version) are refused. */
  minimum?: string;
  /** Sent to every client in x-modal-warning, e.g. a deprecation notice. */
  warning?: string;
}

/** Dotted numeric versions compared part by part ("1.10" > "1.9"); a part that is not a number counts as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => Number.parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** Applies the policy to a control-plane call: throws for a client too old, adds the warning trailer. */
export function checkClientVersion(ctx: CallContext, policy: ClientVersionPolicy): void {
  if (policy.warning) ctx.trailers[WARNING_TRAILER] = encodeURIComponent(policy.warning);
  if (policy.minimum === undefined) return;
  const header = ctx.headers['x-modal-client-version'];
  const version = typeof header === 'string' ? header : '';
  if (!version || compareVersions(version, policy.minimum) < 0)
    throw new RpcError(Code.FAILED_PRECONDITION, `The client version (${version || 'unknown'}) is too old. Please update (pip install --upgrade modal).`);
}

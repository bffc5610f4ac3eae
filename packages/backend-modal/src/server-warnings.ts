// Modal's non-fatal notices (the x-modal-warning metadata on any answer: a client version about to
// be deprecated, and the like), surfaced the way Node surfaces such things: a process warning, once
// per text for the whole process (every call would otherwise repeat it), as Modal's Python SDK
// shows each as a ServerWarning once.
import { redactSecrets } from '@berth/core';

/** The code of the process warning, for `process.on('warning')` listeners and --disable-warning. */
export const SERVER_WARNING_CODE = 'BERTH_MODAL_SERVER_WARNING';

/** Texts seen; bounded, so a server that words every notice differently cannot grow it without end. */
const seen = new Set<string>();
const MAX_SEEN = 64;
const MAX_LENGTH = 2000;

/** Emit a server warning unless this text was emitted already; secrets berth knows are masked. */
export function serverWarning(text: string): void {
  const clean = redactSecrets(text.trim()).slice(0, MAX_LENGTH);
  if (!clean || seen.has(clean) || seen.size >= MAX_SEEN) return;
  seen.add(clean);
  process.emitWarning(`Modal's server warns: ${clean}`, { code: SERVER_WARNING_CODE });
}

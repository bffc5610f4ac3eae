// v4.channel.k8s.io cannot close a command's stdin (only v5 can), so a command reading to EOF
// would never end. On a server that speaks only v4 (Kubernetes before 1.30), berth frames stdin:
// base64 in lines, then a line holding only '.', which base64 never produces. In the sandbox, a
// sed stops at that line and the command sees EOF. Costs a third more bytes and needs sed and
// base64 in the image (busybox and coreutils have both).

/** Bytes per base64 line (a multiple of 3, so lines never need padding but the last). */
const LINE_BYTES = 3 * 1024;

/**
 * The line that ends the framed stdin, and one more: busybox's sed reads a line ahead (to know
 * which is the last), so it acts on the end line only once another has come. GNU sed leaves that
 * one unread, which is harmless: it is already in the pipe.
 */
const END = '.\n\n';

/**
 * sh prologue for a command with framed stdin, run as `sh -c PROLOGUE berth-exec ENV... -- ARGV...`.
 * The first sed reads up to the end line and quits; what the command leaves unread is drained by
 * cat, so the first sed always reaches the end line (the API server otherwise never sends the
 * Status). Without sed or base64 the framed input is drained and the command is not run.
 */
export function framedStdinPrologue(exportsScript: string): string {
  return `${exportsScript}
if ! command -v base64 >/dev/null 2>&1 || ! command -v sed >/dev/null 2>&1; then
  while IFS= read -r l; do [ "$l" = . ] && break; done
  echo "berth: this cluster's exec API (v4.channel.k8s.io) cannot close stdin, so berth sends it framed as base64 lines; that needs base64 and sed in the image" >&2
  exit 126
fi
sed '/^\\.$/q' | { sed '$d' | base64 -d | "$@"; rc=$?; cat >/dev/null; exit $rc; }`;
}

/** Encodes stdin as base64 lines; `end()` gives the rest and the end line. */
export class StdinFramer {
  #pending: Buffer = Buffer.alloc(0);

  /** The whole lines this chunk completes. */
  push(chunk: Buffer): string {
    const data = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    const whole = data.length - (data.length % LINE_BYTES);
    this.#pending = Buffer.from(data.subarray(whole));
    let out = '';
    for (let at = 0; at < whole; at += LINE_BYTES) out += `${data.subarray(at, at + LINE_BYTES).toString('base64')}\n`;
    return out;
  }

  end(): string {
    const rest = this.#pending.length ? `${this.#pending.toString('base64')}\n` : '';
    this.#pending = Buffer.alloc(0);
    return rest + END;
  }
}

/**
 * Collects a stream's bytes up to a cap, keeping the tail: when a command prints 50 MB, the end
 * (where the error usually is) survives and `truncated` says something was dropped.
 */
export class TailBuffer {
  readonly #max: number;
  #chunks: Buffer[] = [];
  #size = 0;
  #truncated = false;

  constructor(maxBytes: number) {
    this.#max = Math.max(0, maxBytes);
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length >= this.#max) {
      this.#truncated = this.#truncated || buf.length > this.#max || this.#size > 0;
      this.#chunks = this.#max > 0 ? [Buffer.from(buf.subarray(buf.length - this.#max))] : [];
      this.#size = this.#max;
      return;
    }
    // Copy: the caller's chunk may be reused by the stream.
    buf = Buffer.from(buf);
    this.#chunks.push(buf);
    this.#size += buf.length;
    while (this.#size > this.#max) {
      this.#truncated = true;
      const head = this.#chunks[0]!;
      const excess = this.#size - this.#max;
      if (head.length <= excess) {
        this.#chunks.shift();
        this.#size -= head.length;
      } else {
        this.#chunks[0] = head.subarray(excess);
        this.#size -= excess;
      }
    }
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  bytes(): Buffer {
    const out = Buffer.concat(this.#chunks, this.#size);
    this.#chunks = [out];
    return out;
  }
}

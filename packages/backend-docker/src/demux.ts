/**
 * Docker multiplexes stdout and stderr of a non-TTY exec on one connection: each frame is an
 * 8-byte header (stream id, 3 zero bytes, big-endian payload length) and the payload. Frames
 * arrive split and merged arbitrarily across chunks.
 */
export class DockerStreamDemuxer {
  #pending: Buffer = Buffer.alloc(0);
  readonly #onFrame: (stream: 'stdout' | 'stderr', payload: Buffer) => void;

  constructor(onFrame: (stream: 'stdout' | 'stderr', payload: Buffer) => void) {
    this.#onFrame = onFrame;
  }

  push(chunk: Buffer): void {
    let buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    while (buf.length >= 8) {
      const size = buf.readUInt32BE(4);
      if (buf.length < 8 + size) break;
      const type = buf[0];
      const payload = buf.subarray(8, 8 + size);
      // 0 is stdin (never sent to us), 1 stdout, 2 stderr.
      if (size > 0) this.#onFrame(type === 2 ? 'stderr' : 'stdout', payload);
      buf = buf.subarray(8 + size);
    }
    this.#pending = buf.length > 0 ? Buffer.from(buf) : Buffer.alloc(0);
  }

  /** Bytes of a frame cut off when the connection ended. */
  get leftover(): number {
    return this.#pending.length;
  }
}

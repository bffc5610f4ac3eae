// The Docker engine's multiplexed stream (attach and exec without a TTY): frames of an 8-byte
// header (stream id: 1 stdout, 2 stderr; three zero bytes; big-endian length) and the payload.
// Chunks from the socket split frames anywhere, so bytes are held until a frame is whole.
export function demuxer(onFrame: (stream: number, payload: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 8 && pending.length >= 8 + pending.readUInt32BE(4)) {
      const size = pending.readUInt32BE(4);
      if (size > 0) onFrame(pending[0] ?? 1, Buffer.from(pending.subarray(8, 8 + size)));
      pending = pending.subarray(8 + size);
    }
  };
}

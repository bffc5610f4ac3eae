// Protobuf wire primitives for the simulator's codec: varints, fixed-width values and
// length-delimited bytes, written to and read from buffers.

/** Input the codec cannot read, or a value it cannot write. */
export class ProtoError extends Error {}

export class Writer {
  readonly #chunks: Buffer[] = [];

  tag(number: number, wt: number): this {
    return this.varint(BigInt(number) * 8n + BigInt(wt));
  }

  varint(n: bigint): this {
    const bytes: number[] = [];
    let v = n;
    do {
      const low = Number(v & 0x7fn);
      v >>= 7n;
      bytes.push(v > 0n ? low | 0x80 : low);
    } while (v > 0n);
    this.#chunks.push(Buffer.from(bytes));
    return this;
  }

  bytes(b: Uint8Array): this {
    this.varint(BigInt(b.length));
    this.#chunks.push(Buffer.from(b));
    return this;
  }

  fixed(size: number, write: (b: Buffer) => void): this {
    const b = Buffer.alloc(size);
    write(b);
    this.#chunks.push(b);
    return this;
  }

  finish(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.#chunks));
  }
}

export class Reader {
  #pos = 0;
  readonly #buf: Buffer;

  constructor(bytes: Uint8Array) {
    this.#buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Bytes read so far. */
  get pos(): number {
    return this.#pos;
  }

  done(): boolean {
    return this.#pos >= this.#buf.length;
  }

  varint(): bigint {
    let n = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const b = this.#buf[this.#pos++];
      if (b === undefined) throw new ProtoError('truncated varint');
      n |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, n);
    }
    throw new ProtoError('varint too long');
  }

  fixed(size: number): Buffer {
    if (this.#pos + size > this.#buf.length) throw new ProtoError('truncated fixed-width value');
    const out = this.#buf.subarray(this.#pos, this.#pos + size);
    this.#pos += size;
    return out;
  }

  lengthDelimited(): Buffer {
    return this.fixed(Number(this.varint()));
  }

  /** Skips a value of an unknown field; `what` names it in the error for an invalid wire type. */
  skip(wt: number, what = 'a field'): void {
    if (wt === 0) this.varint();
    else if (wt === 1) this.fixed(8);
    else if (wt === 2) this.lengthDelimited();
    else if (wt === 5) this.fixed(4);
    else if (wt === 3 || wt === 4) throw new ProtoError(`${what}: wire type ${wt} is a group, which proto3 (and so Modal's API) never sends`);
    else throw new ProtoError(`${what}: wire type ${wt} is not a protobuf wire type (valid: 0, 1, 2, 5)`);
  }
}

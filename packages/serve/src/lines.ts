// One JSON message a line, both ways. Reading splits on '\n' only (JSON strings escape it);
// writing waits for each line to be taken, so a slow reader holds output back rather than the
// server buffering without bound.
import type { Readable, Writable } from 'node:stream';

/** Each line of `input` as it arrives (a last line without '\n' too), until the input ends. */
export async function* readLines(input: Readable): AsyncGenerator<string> {
  let pending = '';
  input.setEncoding('utf8');
  for await (const chunk of input as AsyncIterable<string>) {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line.length > 0) yield line;
      newline = pending.indexOf('\n');
    }
  }
  if (pending.trim().length > 0) yield pending.trim();
}

/** Writes messages in order, one a line; `write` resolves once the stream took it (or was gone). */
export class LineWriter {
  readonly #output: Writable;
  #queue: Promise<void> = Promise.resolve();

  constructor(output: Writable) {
    this.#output = output;
  }

  write(message: unknown): Promise<void> {
    const line = `${JSON.stringify(message)}\n`;
    this.#queue = this.#queue.then(
      () =>
        new Promise<void>((resolve) => {
          if (this.#output.destroyed || this.#output.writableEnded) return resolve();
          // Resolves once written (or failed: a client gone has nothing to be told; the server
          // notices its input ending). The next write waits for it: backpressure without a buffer.
          this.#output.write(line, () => resolve());
        }),
    );
    return this.#queue;
  }
}

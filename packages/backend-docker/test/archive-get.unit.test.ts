// The plain-socket archive reader (archive-get.ts) against exact HTTP answers: a body in chunks cut
// anywhere by the writes, a Content-Length body, the engine's 404 and error JSON, an answer cut
// short. (The real engine's answers run through it in every Docker transfer test and conformance.)
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getArchive } from '../src/archive-get.js';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/** A unix socket that answers every request with `answer` written in pieces of the given sizes. */
async function answering(answer: Buffer, pieces: () => number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-archive-get-'));
  dirs.push(dir);
  const path = join(dir, 'engine.sock');
  const server = createServer((socket: Socket) => {
    // The reader may hang up first (an answer it has read enough of).
    socket.on('error', () => undefined);
    socket.once('data', async () => {
      for (let at = 0; at < answer.length && !socket.destroyed; ) {
        const n = Math.max(1, pieces());
        socket.write(answer.subarray(at, at + n));
        at += n;
        await new Promise((resolve) => setImmediate(resolve));
      }
      socket.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return path;
}

function chunked(body: Buffer, sizes: () => number): Buffer {
  const parts: Buffer[] = [Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n')];
  for (let at = 0; at < body.length; ) {
    const n = Math.min(body.length - at, Math.max(1, sizes()));
    parts.push(Buffer.from(`${n.toString(16)}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n'));
    at += n;
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

async function read(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('the plain-socket archive reader', () => {
  it('decodes a chunked body however the chunks and the writes cut it', async () => {
    for (const [chunk, write, size] of [
      [1, 7, 20_000],
      [4096, 1, 20_000],
      [32_768, 65_537, 3_000_000],
      [100_000, 3, 40_000],
    ] as const) {
      const body = randomBytes(size);
      const rnd = (max: number) => () => 1 + Math.floor(Math.random() * max);
      const path = await answering(chunked(body, rnd(chunk)), rnd(write));
      const stream = await getArchive({ socketPath: path }, '/containers/x/archive?path=%2Fa');
      expect(stream, `chunks up to ${chunk}, writes up to ${write}`).toBeDefined();
      expect((await read(stream!)).equals(body), `chunks up to ${chunk}, writes up to ${write}`).toBe(true);
    }
  });

  it('reads a Content-Length body', async () => {
    const body = randomBytes(70_000);
    const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
    const path = await answering(Buffer.concat([head, body]), () => 1000);
    expect((await read((await getArchive({ socketPath: path }, '/x'))!)).equals(body)).toBe(true);
  });

  it("is undefined on the engine's 404, and rejects with its message and status otherwise", async () => {
    const json = (status: string, message: string) => {
      const text = JSON.stringify({ message });
      return Buffer.from(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\n\r\n${text}`);
    };
    expect(
      await getArchive({ socketPath: await answering(json('404 Not Found', 'Could not find the file /nope in container x'), () => 5) }, '/x'),
    ).toBeUndefined();
    const error = await getArchive({ socketPath: await answering(json('500 Internal Server Error', 'no space left on device'), () => 9) }, '/x').catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ statusCode: 500, json: { message: 'no space left on device' } });
    expect((error as Error).message).toBe('(HTTP code 500) unexpected - no space left on device');
  });

  it('an answer cut short is an error of the stream, never a short file', async () => {
    const full = chunked(randomBytes(50_000), () => 4096);
    const path = await answering(full.subarray(0, full.length - 20_000), () => 1500);
    const stream = await getArchive({ socketPath: path }, '/x');
    await expect(read(stream!)).rejects.toThrow(/ended the archive early/);
  });
});

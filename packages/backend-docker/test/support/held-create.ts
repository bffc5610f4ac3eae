// A socket in front of the engine that forwards everything, except that the engine's answer to the
// first container create is held back until the test releases it: the container exists on the
// engine while the backend's start is still waiting for the create to return.
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ENGINE = '/var/run/docker.sock';

export interface HeldCreate {
  socketPath: string;
  /** Resolves once the engine has answered the first create (the container exists), its answer held. */
  held: Promise<void>;
  /** Passes the held answer (and everything after it) on to the backend. */
  release(): void;
  close(): Promise<void>;
}

export async function holdingCreateAnswer(): Promise<HeldCreate> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-held-'));
  let armed = false;
  let done = false;
  let onHeld!: () => void;
  const held = new Promise<void>((resolve) => (onHeld = resolve));
  let onRelease!: () => void;
  const released = new Promise<void>((resolve) => (onRelease = resolve));
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const engine = connect(ENGINE);
    open.add(client).add(engine);
    let holding: Buffer[] | undefined;
    client.on('data', (chunk) => {
      if (!done && /^POST \S*\/containers\/create/.test(chunk.toString('latin1'))) {
        done = true;
        armed = true;
      }
      engine.write(chunk);
    });
    engine.on('data', (chunk) => {
      if (holding) return void holding.push(chunk);
      if (!armed) return void client.write(chunk);
      armed = false;
      holding = [chunk];
      onHeld();
      void released.then(() => {
        for (const part of holding ?? []) client.write(part);
        holding = undefined;
      });
    });
    client.on('close', () => engine.destroy());
    engine.on('close', () => void released.then(() => client.end()));
    client.on('error', () => undefined);
    engine.on('error', () => undefined);
  });
  const socketPath = join(dir, 'docker.sock');
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    held,
    release: onRelease,
    close: async () => {
      onRelease();
      // Kept-alive connections of the client's agent would hold close() for seconds.
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

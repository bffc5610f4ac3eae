// Who berth says it is to Modal (x-modal-client-type, x-modal-client-version, user-agent), the
// options that set it, and a refusal of the client version as options.clientVersion's ConfigError.
// Against a local node:http2 server standing in for Modal's control plane: no engine needed.
import { readFileSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createModalBackend, type ModalBackendOptions } from '@berth/backend-modal';
import { BERTH_MODAL_VERSION, MODAL_SDK_VERSION, clientIdentity, isClientVersionRefusal } from '../src/client-identity.js';
import { mapModalError } from '../src/modal-errors.js';
import { GRPC_CODE, GrpcError } from '../src/wire/index.js';
import { encodeMessage } from '../src/wire/protobuf.js';
import { testCa } from '@berth/test-support/test-ca';

/** What the stand-in answers AppGetOrCreate with, and the headers of each call it got. */
let reply: (stream: ServerHttp2Stream) => void;
const seen: IncomingHttpHeaders[] = [];
let server: Http2SecureServer;
let origin: string;

const frame = (message: Uint8Array) => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
};
const appOk = (stream: ServerHttp2Stream) => {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end(frame(encodeMessage('AppGetOrCreateResponse', { app_id: 'ap-1' })));
};
const refuse = (code: number, message: string) => (stream: ServerHttp2Stream) =>
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) },
    { endStream: true },
  );

beforeAll(async () => {
  const { key, cert } = testCa();
  server = createSecureServer({ key, cert });
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    stream.on('error', () => undefined);
    stream.resume();
    stream.on('end', () => reply(stream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** A backend pointed at the stand-in, reading nothing of this machine's Modal or Docker config. */
function backend(extra: Partial<ModalBackendOptions> = {}) {
  return createModalBackend({
    serverUrl: origin,
    ca: testCa().ca,
    tokenId: 'ak-test',
    tokenSecret: 'as-secret-value',
    modalConfigEnv: {},
    dockerConfigEnv: {},
    guardian: false,
    ...extra,
  });
}

describe('client identity', () => {
  it("defaults: type 1 (CLIENT_TYPE_CLIENT) and the pinned SDK's version, as Modal's Python SDK 1.6.4 sends them; a user-agent naming berth", async () => {
    reply = appOk;
    seen.length = 0;
    const b = backend();
    const checks = (await b.preflight()).checks;
    await b.close();
    expect(checks.find((c) => c.name === 'api')).toMatchObject({ status: 'ok' });
    expect(seen[0]).toMatchObject({
      'x-modal-client-type': '1',
      'x-modal-client-version': MODAL_SDK_VERSION,
      'user-agent': expect.stringMatching(new RegExp(`^berth/${BERTH_MODAL_VERSION.replace(/\./g, '\\.')} \\(@berth/backend-modal; node/`)),
    });
    expect(MODAL_SDK_VERSION).toBe('1.6.4');
  });

  it('clientVersion and clientType (a name or a number) are what is sent', async () => {
    reply = appOk;
    seen.length = 0;
    for (const extra of [
      { clientVersion: '1.0.0', clientType: 'CLIENT_TYPE_LIBMODAL_JS' as const },
      { clientVersion: '424242', clientType: 9 },
    ]) {
      const b = backend(extra);
      await b.preflight();
      await b.close();
    }
    expect(seen.map((h) => [h['x-modal-client-type'], h['x-modal-client-version']])).toEqual([
      ['8', '1.0.0'],
      ['9', '424242'],
    ]);
  });

  it('a clientVersion or clientType that cannot be sent is a ConfigError naming the option, before any I/O', () => {
    const at = (extra: Record<string, unknown>) => {
      try {
        createModalBackend({ ...(extra as ModalBackendOptions), modalConfigEnv: {} });
      } catch (error) {
        return error;
      }
      return undefined;
    };
    for (const [extra, path] of [
      [{ clientVersion: '' }, 'options.clientVersion'],
      [{ clientVersion: '1.6.4\r\nx-evil: 1' }, 'options.clientVersion'],
      [{ clientVersion: 164 }, 'options.clientVersion'],
      [{ clientType: 'CLIENT_TYPE_ROBOT' }, 'options.clientType'],
      [{ clientType: -1 }, 'options.clientType'],
      [{ clientType: 1.5 }, 'options.clientType'],
    ] as const) {
      const error = at(extra);
      expect(ConfigError.isInstance(error), JSON.stringify(extra)).toBe(true);
      expect((error as ConfigError).path).toBe(path);
    }
    expect((at({ clientType: 'CLIENT_TYPE_ROBOT' }) as Error).message).toMatch(/CLIENT_TYPE_CLIENT, .*CLIENT_TYPE_LIBMODAL_GO/);
    expect(clientIdentity({})).toMatchObject({ version: '1.6.4', type: 1 });
  });

  it('BERTH_MODAL_VERSION is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(BERTH_MODAL_VERSION).toBe(pkg.version);
  });
});

describe("Modal's warnings through the backend", () => {
  it('an x-modal-warning on an answer is a process warning (BERTH_MODAL_SERVER_WARNING), once', async () => {
    const text = `Version 1.6.4 of \`modal\` will be deprecated (${Date.now()}). Please upgrade.`;
    reply = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-modal-warning': encodeURIComponent(text) }));
      stream.end(frame(encodeMessage('AppGetOrCreateResponse', { app_id: 'ap-1' })));
    };
    const warnings: Array<Error & { code?: string }> = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    try {
      for (let i = 0; i < 2; i++) {
        const b = backend();
        expect((await b.preflight()).checks.find((c) => c.name === 'api')).toMatchObject({ status: 'ok' });
        await b.close();
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listen);
    }
    expect(warnings.map((w) => [w.code, w.message])).toEqual([['BERTH_MODAL_SERVER_WARNING', `Modal's server warns: ${text}`]]);
  });
});

describe('Modal refusing the client version', () => {
  const ctx = { operation: 'start' as const };
  it.each([
    'The client version (1.1.0) is too old. Please update (pip install --upgrade modal).',
    'Unsupported client version 1.1.0',
    'This version of the Modal client is no longer supported; upgrade to 1.7 or later',
    'Version 1.1.0 of `modal` is deprecated. Please upgrade to the latest version using `pip install --upgrade modal`.',
  ])('FAILED_PRECONDITION "%s" is a ConfigError on options.clientVersion saying what to upgrade or set', (text) => {
    expect(isClientVersionRefusal(text)).toBe(true);
    const error = mapModalError(new GrpcError(GRPC_CODE.FAILED_PRECONDITION, text), ctx, { path: 'spec.image.auth.secretName' });
    expect(ConfigError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ path: 'options.clientVersion', operation: 'start' });
    expect(error?.message).toContain(text);
    expect(error?.message).toMatch(/upgrade @berth\/backend-modal.*set options\.clientVersion/);
    expect((error as ConfigError).cause).toBeInstanceOf(GrpcError);
  });

  it.each([
    'Secret "ghcr" is missing required key REGISTRY_PASSWORD',
    'Image builder version 2023.12 is no longer supported; please update the builder version',
    'Please update the secret before using it',
  ])('other FAILED_PRECONDITIONs stay the spec\'s: "%s"', (text) => {
    expect(isClientVersionRefusal(text)).toBe(false);
    const error = mapModalError(new GrpcError(GRPC_CODE.FAILED_PRECONDITION, text), ctx, { path: 'spec.image.auth.secretName' });
    expect(error).toMatchObject({ path: 'spec.image.auth.secretName' });
  });

  it('through the backend: a start and a preflight refused for the client version name the option; the token is in neither', async () => {
    reply = refuse(GRPC_CODE.FAILED_PRECONDITION, 'The client version (1.6.4) is too old. Please update (pip install --upgrade modal).');
    const b = backend();
    const error = await b.start({ image: 'busybox:1.36' }).catch((e: unknown) => e);
    const api = (await b.preflight()).checks.find((c) => c.name === 'api');
    await b.close();
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({ path: 'options.clientVersion' });
    expect(api).toMatchObject({ status: 'fail', message: expect.stringContaining('options.clientVersion') });
    expect(JSON.stringify(error)).not.toContain('as-secret-value');
    expect(JSON.stringify(api)).not.toContain('as-secret-value');
  });
});

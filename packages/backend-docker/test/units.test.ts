// Docker's own wording and framing, checked without an engine: the stream demuxer, the daemon
// error mapping, start refusals and the auth payload.
import { describe, expect, it } from 'vitest';
import { BackendAuthError, BackendUnavailableError, ConfigError, SandboxLostError } from '@berth/core';
import { DockerStreamDemuxer } from '../src/demux.js';
import { dockerMessage, isContainerGone, mapDaemonError, mapEnvironmentError, startRefusal } from '../src/docker-errors.js';
import { createDockerBackend } from '../src/backend.js';
import { dockerAuthConfig } from '../src/pull.js';

function frame(stream: 1 | 2, payload: string): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

const apiError = (statusCode: number | undefined, message: string, code?: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message }, ...(code ? { code } : {}) });

const ctx = { operation: 'exec' as const, backend: 'docker', environmentId: 'berth-1' };

describe('Docker stream demuxer', () => {
  it('splits frames however the chunks cut them, and counts a frame cut off at the end', () => {
    const got: Array<[string, string]> = [];
    const demux = new DockerStreamDemuxer((which, payload) => got.push([which, payload.toString()]));
    const bytes = Buffer.concat([frame(1, 'out-1'), frame(2, 'err'), frame(1, 'out-2')]);
    for (let i = 0; i < bytes.length; i += 3) demux.push(bytes.subarray(i, i + 3));
    expect(got).toEqual([
      ['stdout', 'out-1'],
      ['stderr', 'err'],
      ['stdout', 'out-2'],
    ]);
    expect(demux.leftover).toBe(0);
    demux.push(frame(1, 'cut short').subarray(0, 10));
    expect(demux.leftover).toBe(10);
  });
});

describe('daemon error mapping', () => {
  it('unreachable daemon, permission denied and 5xx are typed; deterministic 500s are not "unavailable"', () => {
    expect(mapDaemonError(Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT' }), ctx)).toBeInstanceOf(BackendUnavailableError);
    expect(mapDaemonError(Object.assign(new Error('connect EACCES'), { code: 'EACCES' }), ctx)).toBeInstanceOf(BackendAuthError);
    expect(mapDaemonError(apiError(500, 'internal server error'), ctx)).toBeInstanceOf(BackendUnavailableError);
    expect(mapDaemonError(apiError(500, 'Error processing tar file(exit status 1): no space left on device'), ctx)).toBeUndefined();
    expect(mapDaemonError(apiError(400, 'bad parameter'), ctx)).toBeUndefined();
  });

  it('a container that is gone or stopped is a lost sandbox', () => {
    expect(isContainerGone(apiError(409, 'Container abc is not running'))).toBe(true);
    expect(isContainerGone(apiError(404, 'No such container: abc'))).toBe(true);
    const lost = mapEnvironmentError(apiError(404, 'No such container: abc'), ctx);
    expect(SandboxLostError.isInstance(lost)).toBe(true);
    expect(lost).toMatchObject({ lastState: 'removed', environmentId: 'berth-1' });
  });

  it('start refusals name the field to fix', () => {
    const start = { operation: 'start' as const, backend: 'docker', environmentId: 'berth-1' };
    expect(startRefusal(apiError(400, 'invalid mount config for type "bind": bind source path does not exist: /x'), start, 'img')).toMatchObject({
      path: 'spec.mounts',
    });
    expect(startRefusal(apiError(400, 'exec: "/bin/sh": stat /bin/sh: no such file or directory'), start, 'img')).toMatchObject({ path: 'spec.image' });
    expect(startRefusal(apiError(400, 'Minimum memory limit allowed is 6MB'), start, 'img')).toBeInstanceOf(ConfigError);
    expect(startRefusal(apiError(500, 'something else'), start, 'img')).toBeUndefined();
  });
});

describe('engine wording', () => {
  it("drops docker-modem's HTTP status prefix, which misleads for a registry's refusal", () => {
    const relayed = Object.assign(new Error('(HTTP code 500) server error - Head "http://r/v2/x/manifests/1": no basic auth credentials'), {
      statusCode: 500,
      json: null,
    });
    expect(dockerMessage(relayed)).toBe('Head "http://r/v2/x/manifests/1": no basic auth credentials');
  });

  it('refuses the old name of dockerConfigEnv, saying what it became', () => {
    expect(() => createDockerBackend({ env: {} } as never)).toThrow(/now dockerConfigEnv/);
  });
});

describe('registry auth payload', () => {
  it("is what Docker's X-Registry-Auth takes", () => {
    expect(dockerAuthConfig({ serverAddress: 'r:5000', username: 'u', password: 'p' })).toEqual({ serveraddress: 'r:5000', username: 'u', password: 'p' });
    expect(dockerAuthConfig({ serverAddress: 'r', identityToken: 't' })).toEqual({ serveraddress: 'r', identitytoken: 't' });
    expect(dockerAuthConfig(undefined)).toBeUndefined();
  });
});

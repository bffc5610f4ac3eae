// The TaskExecStartRequest berth builds, byte for byte against encodings not made by berth's codec:
// the env (12) form against protoc's vector, the secret_sources (13) form, which Modal's Python SDK
// 1.6.4 sends for exec(env=...), against the SDK's own serialization. No engine needed.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXEC_ENV_AS, execStartRequest, type ExecStart } from '../src/wire/exec-start.js';
import { decodeMessage, encodeMessage } from '../src/wire/protobuf.js';

const vectors = JSON.parse(readFileSync(new URL('./fixtures/vectors.json', import.meta.url), 'utf8')) as Array<{ message: string; text: string; hex: string }>;
const execVector = (field: string) => {
  const v = vectors.find((x) => x.message === 'modal.task_command_router.TaskExecStartRequest' && new RegExp(`\\b${field} \\{`).test(x.text));
  if (!v) throw new Error(`no TaskExecStartRequest vector with ${field}`);
  return v.hex;
};
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

const exec = (env: Record<string, string>): ExecStart => ({
  execId: '0b6f1c9e-6a7e-4a43-9d3e-2f3b8f1a2c4d',
  argv: ['bash', '-lc', 'pytest -q'],
  env,
  workdir: '/testbed',
  timeoutSecs: 600,
});

describe('TaskExecStartRequest', () => {
  it('env as the SDK sends it, and berth by default: one secret_sources entry holding the map, and no env (12)', () => {
    expect(EXEC_ENV_AS).toBe('secret_sources');
    const request = execStartRequest('ta-55', exec({ PYTHONUNBUFFERED: '1', TERM: 'xterm 256 ✓' }));
    expect(request.env).toBeUndefined();
    expect(hex(encodeMessage('TaskExecStartRequest', request))).toBe(execVector('secret_sources'));
    expect(decodeMessage('TaskExecStartRequest', encodeMessage('TaskExecStartRequest', request)).secret_sources).toEqual([
      { env: { contents: { PYTHONUNBUFFERED: '1', TERM: 'xterm 256 ✓' } } },
    ]);
  });

  it('env in the env map (12), the form berth sent before', () => {
    const request = execStartRequest('ta-55', exec({ PYTHONUNBUFFERED: '1' }), 'env');
    expect(hex(encodeMessage('TaskExecStartRequest', request))).toBe(execVector('env'));
  });

  it('an empty environment sends neither field', () => {
    for (const as of ['env', 'secret_sources'] as const) {
      const decoded = decodeMessage('TaskExecStartRequest', encodeMessage('TaskExecStartRequest', execStartRequest('ta-1', exec({}), as)));
      expect(decoded.env).toBeUndefined();
      expect(decoded.secret_sources).toBeUndefined();
    }
  });
});

// Where the Modal token comes from, in Modal's own order; the secret never shows in an error.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, serializeError } from '@berth/core';
import { resolveCredentials } from '../src/credentials.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-modal-cred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const toml = (text: string) => {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(path, text);
  return path;
};

const PROFILES = `[default]
token_id = "ak-default"
token_secret = "as-default"

[work]
token_id = "ak-work"   # the one in use
token_secret = "as-work"
server_url = "https://modal.internal:8443"
active = true
`;

describe('resolveCredentials', () => {
  it('options first, then MODAL_TOKEN_ID / MODAL_TOKEN_SECRET, then the active profile', () => {
    const configPath = toml(PROFILES);
    const env = { MODAL_TOKEN_ID: 'ak-env', MODAL_TOKEN_SECRET: 'as-env' };
    expect(resolveCredentials({ tokenId: 'ak-opt', tokenSecret: 'as-opt', modalConfigEnv: env, configPath })).toMatchObject({
      tokenId: 'ak-opt',
      tokenSecret: 'as-opt',
      source: 'options',
    });
    expect(resolveCredentials({ modalConfigEnv: env, configPath })).toMatchObject({
      tokenId: 'ak-env',
      tokenSecret: 'as-env',
      source: 'MODAL_TOKEN_ID',
      serverUrl: 'https://modal.internal:8443',
    });
    expect(resolveCredentials({ modalConfigEnv: {}, configPath })).toMatchObject({
      tokenId: 'ak-work',
      tokenSecret: 'as-work',
      serverUrl: 'https://modal.internal:8443',
    });
  });

  it('MODAL_PROFILE picks a profile; a single profile needs no active flag; the server defaults to Modal', () => {
    const configPath = toml(PROFILES);
    expect(resolveCredentials({ modalConfigEnv: { MODAL_PROFILE: 'default' }, configPath })).toMatchObject({ tokenId: 'ak-default' });
    const single = toml('[only]\ntoken_id = "ak-1"\ntoken_secret = "as-1"\n');
    expect(resolveCredentials({ modalConfigEnv: {}, configPath: single })).toMatchObject({ tokenId: 'ak-1', serverUrl: 'https://api.modal.com' });
    expect(resolveCredentials({ modalConfigEnv: { MODAL_SERVER_URL: 'https://127.0.0.1:9/' }, configPath: single }).serverUrl).toBe('https://127.0.0.1:9');
  });

  it('no token anywhere is a ConfigError that says where it looked and how to fix it', () => {
    let error: unknown;
    try {
      resolveCredentials({ modalConfigEnv: {}, configPath: join(dir, 'missing.toml') });
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/MODAL_TOKEN_ID.*modal token new.*missing\.toml/);
  });

  it('the secret is redacted from anything serialised afterwards', () => {
    resolveCredentials({ tokenId: 'ak-x', tokenSecret: 'as-very-secret-value', modalConfigEnv: {} });
    const error = new ConfigError({ operation: 'config', path: 'x', message: 'token as-very-secret-value was refused' });
    expect(JSON.stringify(serializeError(error))).not.toContain('as-very-secret-value');
  });
});

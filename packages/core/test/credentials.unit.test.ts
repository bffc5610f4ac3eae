import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { chmod, mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveRegistryCredential } from '../src/credentials.js';
import { ConfigError } from '../src/errors.js';
import { redactSecrets } from '../src/redact.js';

let root: string;
let bin: string;
let counter = 0;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** Real credential helpers, speaking Docker's protocol: server address on stdin, JSON on stdout. */
const HELPERS: Record<string, string> = {
  // Records what it was asked for, so tests can check the server address sent.
  berthtest: `server=$(cat)
printf '%s' "$server" > "$(dirname "$0")/berthtest.input"
printf '{"ServerURL":"%s","Username":"helper-user","Secret":"helper-pass-Q7x9"}\\n' "$server"`,
  berthtoken: `cat >/dev/null
printf '{"ServerURL":"x","Username":"<token>","Secret":"helper-identity-token-Z3"}'`,
  berthnotfound: `cat >/dev/null
echo "Credentials Not Found in native keychain"
exit 1`,
  berthfail: `cat >/dev/null
echo "keychain is locked" >&2
exit 3`,
  berthgarbage: `cat >/dev/null
echo "helper-garbage-secret-W4 not json"`,
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-credentials-'));
  bin = join(root, 'bin');
  await mkdir(bin);
  for (const [name, body] of Object.entries(HELPERS)) {
    const file = join(bin, `docker-credential-${name}`);
    await writeFile(file, `#!/bin/sh\n${body}\n`);
    await chmod(file, 0o755);
  }
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh docker config dir holding `config` (written verbatim when a string), and an env for it. */
async function setup(config?: unknown, extraEnv: Record<string, string> = {}) {
  const dir = join(root, `cfg-${++counter}`);
  await mkdir(dir);
  const file = join(dir, 'config.json');
  if (config !== undefined) await writeFile(file, typeof config === 'string' ? config : JSON.stringify(config));
  const env: Record<string, string> = { PATH: `${bin}:/usr/bin:/bin`, HOME: join(root, 'no-home'), ...extraEnv };
  return { dir, file, env, opts: { env, dockerConfigDir: dir } };
}

async function rejection(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ConfigError.isInstance(error)).toBe(true);
  return error as ConfigError;
}

describe('resolveRegistryCredential: config.json auths', () => {
  it('returns undefined when there is no config file', async () => {
    const { opts } = await setup();
    expect(await resolveRegistryCredential('docker.io', opts)).toBeUndefined();
  });

  it('decodes a base64 auth blob and registers the password as a secret', async () => {
    const { opts } = await setup({ auths: { 'localhost:5000': { auth: b64('alice:s3cret-Pa55:with-colon') } } });
    const cred = await resolveRegistryCredential('localhost:5000', opts);
    expect(cred).toEqual({
      serverAddress: 'localhost:5000',
      username: 'alice',
      password: 's3cret-Pa55:with-colon',
      source: 'config.auths',
    });
    expect(redactSecrets('x s3cret-Pa55:with-colon')).not.toContain('s3cret-Pa55');
    expect(redactSecrets(`x ${b64('alice:s3cret-Pa55:with-colon')}`)).not.toContain(b64('alice:s3cret-Pa55:with-colon'));
  });

  it('reads username/password fields', async () => {
    const { opts } = await setup({ auths: { 'registry.example.com': { username: 'bob', password: 'bobs-password-1' } } });
    expect(await resolveRegistryCredential('registry.example.com', opts)).toMatchObject({
      username: 'bob',
      password: 'bobs-password-1',
    });
    expect(redactSecrets('x bobs-password-1')).not.toContain('bobs-password-1');
  });

  it('reads an identity token', async () => {
    const { opts } = await setup({ auths: { 'myacr.azurecr.io': { username: '00000000-0000', identitytoken: 'identity-tok-123' } } });
    const cred = await resolveRegistryCredential('myacr.azurecr.io', opts);
    expect(cred).toMatchObject({ identityToken: 'identity-tok-123', source: 'config.auths' });
    expect(cred?.password).toBeUndefined();
    expect(redactSecrets('x identity-tok-123')).not.toContain('identity-tok-123');
  });

  it.each([
    'https://index.docker.io/v1/',
    'index.docker.io',
    'docker.io',
    'registry-1.docker.io',
    'https://docker.io',
    'https://registry-1.docker.io',
    'https://index.docker.io/v2/',
  ])('matches the Docker Hub key %s', async (key) => {
    const { opts } = await setup({ auths: { 'ghcr.io': { auth: b64('other:other-pass') }, [key]: { auth: b64('hubuser:hub-password') } } });
    for (const registry of ['docker.io', 'index.docker.io']) {
      expect(await resolveRegistryCredential(registry, opts)).toEqual({
        serverAddress: 'https://index.docker.io/v1/',
        username: 'hubuser',
        password: 'hub-password',
        source: 'config.auths',
      });
    }
  });

  it.each([
    'reg.example.com:5000',
    'https://reg.example.com:5000',
    'http://reg.example.com:5000',
    'https://reg.example.com:5000/v2/',
    'reg.example.com:5000/v1/',
  ])('matches the host key %s', async (key) => {
    const { opts } = await setup({ auths: { [key]: { auth: b64('carol:carol-pass') } } });
    expect(await resolveRegistryCredential('reg.example.com:5000', opts)).toMatchObject({ username: 'carol' });
  });

  it('does not match another host, port or Docker Hub', async () => {
    const { opts } = await setup({ auths: { 'reg.example.com:5000': { auth: b64('carol:carol-pass') }, 'https://index.docker.io/v1/': {} } });
    for (const registry of ['reg.example.com', 'reg.example.com:5001', 'example.com', 'docker.io']) {
      expect(await resolveRegistryCredential(registry, opts)).toBeUndefined();
    }
  });

  it('prefers the exact server address and skips empty placeholder entries', async () => {
    const { opts } = await setup({
      auths: { 'docker.io': { auth: b64('second:second-pass') }, 'https://index.docker.io/v1/': { auth: b64('first:first-pass') } },
    });
    expect((await resolveRegistryCredential('docker.io', opts))?.username).toBe('first');
    const placeholder = await setup({ auths: { 'https://index.docker.io/v1/': {}, 'docker.io': { auth: b64('real:real-pass') } } });
    expect((await resolveRegistryCredential('docker.io', placeholder.opts))?.username).toBe('real');
  });

  it('finds config.json via env.DOCKER_CONFIG, then env.HOME/.docker', async () => {
    const { dir, env } = await setup({ auths: { 'ghcr.io': { auth: b64('dave:dave-pass') } } });
    expect((await resolveRegistryCredential('ghcr.io', { env: { ...env, DOCKER_CONFIG: dir } }))?.username).toBe('dave');
    const home = join(root, `home-${++counter}`);
    await mkdir(join(home, '.docker'), { recursive: true });
    await writeFile(join(home, '.docker', 'config.json'), JSON.stringify({ auths: { 'ghcr.io': { auth: b64('erin:erin-pass') } } }));
    expect((await resolveRegistryCredential('ghcr.io', { env: { ...env, HOME: home } }))?.username).toBe('erin');
  });
});

describe('resolveRegistryCredential: DOCKER_AUTH_CONFIG', () => {
  it('takes precedence over config.json', async () => {
    const { opts } = await setup(
      { auths: { 'ghcr.io': { auth: b64('fromfile:file-pass') } } },
      { DOCKER_AUTH_CONFIG: JSON.stringify({ auths: { 'ghcr.io': { auth: b64('fromenv:env-pass-77') } } }) },
    );
    expect(await resolveRegistryCredential('ghcr.io', opts)).toEqual({
      serverAddress: 'ghcr.io',
      username: 'fromenv',
      password: 'env-pass-77',
      source: 'DOCKER_AUTH_CONFIG',
    });
    expect(redactSecrets('x env-pass-77')).not.toContain('env-pass-77');
  });

  it('falls through to config.json when it has nothing for the registry', async () => {
    const { opts } = await setup(
      { auths: { 'ghcr.io': { auth: b64('fromfile:file-pass') } } },
      { DOCKER_AUTH_CONFIG: JSON.stringify({ auths: { 'quay.io': { auth: b64('q:quay-pass') } } }) },
    );
    expect(await resolveRegistryCredential('ghcr.io', opts)).toMatchObject({ username: 'fromfile', source: 'config.auths' });
  });

  it('works without any config file', async () => {
    const { opts } = await setup(undefined, { DOCKER_AUTH_CONFIG: JSON.stringify({ auths: { 'docker.io': { username: 'u', password: 'env-only-pass' } } }) });
    expect(await resolveRegistryCredential('docker.io', opts)).toMatchObject({ password: 'env-only-pass', source: 'DOCKER_AUTH_CONFIG' });
  });
});

describe('resolveRegistryCredential: credential helpers', () => {
  it('runs credHelpers[registry] with the server address on stdin', async () => {
    const { opts } = await setup({
      credHelpers: { 'gcr.example.io': 'berthtest' },
      auths: { 'gcr.example.io': { auth: b64('ignored:ignored-pass') } },
    });
    const cred = await resolveRegistryCredential('gcr.example.io', opts);
    expect(cred).toEqual({ serverAddress: 'gcr.example.io', username: 'helper-user', password: 'helper-pass-Q7x9', source: 'credHelpers' });
    expect(await readFile(join(bin, 'berthtest.input'), 'utf8')).toBe('gcr.example.io');
    expect(redactSecrets('x helper-pass-Q7x9')).not.toContain('helper-pass-Q7x9');
  });

  it('asks a helper for Docker Hub under https://index.docker.io/v1/', async () => {
    const { opts } = await setup({ credHelpers: { 'docker.io': 'berthtest' } });
    expect((await resolveRegistryCredential('docker.io', opts))?.source).toBe('credHelpers');
    expect(await readFile(join(bin, 'berthtest.input'), 'utf8')).toBe('https://index.docker.io/v1/');
  });

  it("reads Username '<token>' as an identity token", async () => {
    const { opts } = await setup({ credHelpers: { 'ghcr.io': 'berthtoken' } });
    const cred = await resolveRegistryCredential('ghcr.io', opts);
    expect(cred).toEqual({ serverAddress: 'ghcr.io', identityToken: 'helper-identity-token-Z3', source: 'credHelpers' });
    expect(redactSecrets('x helper-identity-token-Z3')).not.toContain('helper-identity-token-Z3');
  });

  it('uses credsStore as the fallback for every registry, after auths', async () => {
    const { opts } = await setup({ credsStore: 'berthtest', auths: { 'ghcr.io': { auth: b64('inline:inline-pass') }, 'quay.io': {} } });
    expect(await resolveRegistryCredential('quay.io', opts)).toMatchObject({ username: 'helper-user', source: 'credsStore' });
    expect(await readFile(join(bin, 'berthtest.input'), 'utf8')).toBe('quay.io');
    expect(await resolveRegistryCredential('ghcr.io', opts)).toMatchObject({ username: 'inline', source: 'config.auths' });
  });

  it('treats "credentials not found" as no credentials, in any case', async () => {
    const { opts } = await setup({ credsStore: 'berthnotfound' });
    expect(await resolveRegistryCredential('quay.io', opts)).toBeUndefined();
    // A helper with nothing falls through to the next source.
    const withAuths = await setup({ credHelpers: { 'quay.io': 'berthnotfound' }, auths: { 'quay.io': { auth: b64('fb:fallback-pass') } } });
    expect(await resolveRegistryCredential('quay.io', withAuths.opts)).toMatchObject({ username: 'fb', source: 'config.auths' });
  });

  it('names a missing helper and the config that configures it', async () => {
    const { opts, file } = await setup({ credsStore: 'nosuchhelper' });
    const error = await rejection(resolveRegistryCredential('quay.io', opts));
    expect(error.message).toContain('docker-credential-nosuchhelper');
    expect(error.message).toContain('not on PATH');
    expect(error.message).toContain(`credsStore in the Docker config file ${file}`);

    const env = await setup(undefined, { DOCKER_AUTH_CONFIG: JSON.stringify({ credHelpers: { 'ghcr.io': 'alsomissing' } }) });
    const fromEnv = await rejection(resolveRegistryCredential('ghcr.io', env.opts));
    expect(fromEnv.message).toContain('docker-credential-alsomissing');
    expect(fromEnv.message).toContain('credHelpers["ghcr.io"] in the environment variable DOCKER_AUTH_CONFIG');
  });

  it('reports a failing helper with its diagnostics', async () => {
    const { opts } = await setup({ credsStore: 'berthfail' });
    const error = await rejection(resolveRegistryCredential('quay.io', opts));
    expect(error.message).toMatch(/docker-credential-berthfail failed \(exit code 3\) for quay\.io: keychain is locked/);
  });

  it('never quotes a helper output that is not JSON', async () => {
    const { opts } = await setup({ credsStore: 'berthgarbage' });
    const error = await rejection(resolveRegistryCredential('quay.io', opts));
    expect(error.message).toContain('not JSON');
    expect(error.message).not.toContain('helper-garbage-secret-W4');
  });
});

describe('resolveRegistryCredential: malformed configuration', () => {
  it('names the file but never shows its contents for malformed JSON', async () => {
    const { opts, file } = await setup('{"auths": {"ghcr.io": {"password": "leaky-secret-991", }}}');
    const error = await rejection(resolveRegistryCredential('ghcr.io', opts));
    expect(error.message).toContain(file);
    expect(error.message).toContain('not valid JSON');
    expect(error.message).not.toContain('leaky-secret-991');
    expect(JSON.stringify(error.toJSON())).not.toContain('leaky-secret-991');
  });

  it('names DOCKER_AUTH_CONFIG when it is malformed', async () => {
    const { opts } = await setup(undefined, { DOCKER_AUTH_CONFIG: '{"auths": {"x": {"auth": "env-leak-secret-5"' });
    const error = await rejection(resolveRegistryCredential('x', opts));
    expect(error.message).toContain('DOCKER_AUTH_CONFIG');
    expect(error.message).not.toContain('env-leak-secret-5');
    expect(error.path).toBe('DOCKER_AUTH_CONFIG');
  });

  it('rejects a config that is not an object, or auths that are not objects', async () => {
    expect((await rejection(resolveRegistryCredential('x', (await setup('[1]')).opts))).message).toMatch(/must hold a JSON object/);
    expect((await rejection(resolveRegistryCredential('x', (await setup({ auths: [] })).opts))).message).toMatch(/"auths" must be an object/);
    expect((await rejection(resolveRegistryCredential('x', (await setup({ auths: { x: 'str' } })).opts))).message).toMatch(/auths\["x"\] must be an object/);
  });

  it.each(['not base64!!', b64('no-colon-here'), 'abc'])('rejects the malformed auth blob %j without quoting it', async (blob) => {
    const { opts } = await setup({ auths: { 'ghcr.io': { auth: blob } } });
    const error = await rejection(resolveRegistryCredential('ghcr.io', opts));
    expect(error.message).toContain('auths["ghcr.io"].auth is not valid base64 of "username:password"');
    expect(error.message).not.toContain(blob);
  });
});

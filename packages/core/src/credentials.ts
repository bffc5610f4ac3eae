import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './errors.js';
import { normaliseRegistry, registryServerAddress } from './image-ref.js';
import { redactSecrets, registerSecret } from './redact.js';

export interface RegistryCredential {
  /** The address credentials were asked for: the registry host, or 'https://index.docker.io/v1/'. */
  serverAddress: string;
  username?: string;
  password?: string;
  identityToken?: string;
  source: 'DOCKER_AUTH_CONFIG' | 'config.auths' | 'credHelpers' | 'credsStore' | 'spec';
}

export interface CredentialResolveOptions {
  /** Defaults to process.env. Also the environment (and PATH) credential helpers run with. */
  env?: Record<string, string | undefined>;
  /** Defaults to env.DOCKER_CONFIG, else ~/.docker. */
  dockerConfigDir?: string;
}

const HELPER_TIMEOUT_MS = 15_000;

interface AuthEntry {
  auth?: unknown;
  username?: unknown;
  password?: unknown;
  identitytoken?: unknown;
  registrytoken?: unknown;
}

interface DockerConfig {
  auths?: Record<string, AuthEntry>;
  credHelpers?: Record<string, unknown>;
  credsStore?: unknown;
}

/** Where a config came from: the env var name or the file path, for messages. */
interface LoadedConfig {
  where: string;
  isEnv: boolean;
  config: DockerConfig;
}

/**
 * Docker's ConvertToHostname: drop the scheme and any path ('https://host/v1/' -> 'host'), then
 * fold Docker Hub's aliases so every spelling of the Hub matches 'docker.io'.
 */
function keyHost(key: string): string {
  return normaliseRegistry(key.replace(/^https?:\/\//i, '').split('/')[0]!);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function configError(message: string, where: string): ConfigError {
  return new ConfigError({ message, path: where, operation: 'config' });
}

/** Parse a config; the text holds secrets, so neither it nor JSON.parse's message (which quotes it) is kept. */
function parseConfig(text: string, where: string, isEnv: boolean): LoadedConfig {
  const what = isEnv ? `The environment variable ${where}` : `The Docker config file ${where}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec(error instanceof Error ? error.message : '')?.[1];
    const at = position === undefined ? '' : ` (near character ${position})`;
    throw configError(`${what} is not valid JSON${at}; expected the shape of ~/.docker/config.json: {"auths": {...}}`, where);
  }
  if (!isObject(parsed)) throw configError(`${what} must hold a JSON object like {"auths": {...}}`, where);
  for (const field of ['auths', 'credHelpers'] as const) {
    const value = parsed[field];
    if (value !== undefined && !isObject(value)) throw configError(`${what}: "${field}" must be an object`, where);
  }
  const auths = (parsed.auths ?? {}) as Record<string, unknown>;
  for (const [key, entry] of Object.entries(auths)) {
    if (!isObject(entry)) throw configError(`${what}: auths[${JSON.stringify(key)}] must be an object`, where);
    // Mask every secret in the config, not only the one used: all of them are now in memory.
    for (const field of ['auth', 'password', 'identitytoken', 'registrytoken']) registerSecret(str(entry[field]));
  }
  return { where, isEnv, config: parsed as DockerConfig };
}

async function loadConfigs(env: Record<string, string | undefined>, dir: string): Promise<LoadedConfig[]> {
  const configs: LoadedConfig[] = [];
  const fromEnv = env.DOCKER_AUTH_CONFIG;
  if (fromEnv !== undefined && fromEnv.trim() !== '') configs.push(parseConfig(fromEnv, 'DOCKER_AUTH_CONFIG', true));
  const file = join(dir, 'config.json');
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      throw new ConfigError({
        message: `Cannot read the Docker config file ${file} (${code ?? 'unknown error'})`,
        path: file,
        operation: 'config',
        cause: error,
      });
    }
  }
  if (text !== undefined) configs.push(parseConfig(text, file, false));
  return configs;
}

/** Credentials from one auths entry; undefined for an empty entry (Docker writes those with credsStore). */
function fromAuthEntry(entry: AuthEntry, key: string, loaded: LoadedConfig, serverAddress: string): RegistryCredential | undefined {
  let username = str(entry.username);
  let password = str(entry.password);
  const auth = str(entry.auth);
  if (auth !== undefined) {
    const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(auth) && auth.length % 4 === 0 ? Buffer.from(auth, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon <= 0) {
      throw configError(
        `${loaded.isEnv ? 'The environment variable' : 'The Docker config file'} ${loaded.where}: auths[${JSON.stringify(key)}].auth ` +
          `is not valid base64 of "username:password"`,
        loaded.where,
      );
    }
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
    registerSecret(password);
  }
  const identityToken = str(entry.identitytoken);
  if (username === undefined && password === undefined && identityToken === undefined) return undefined;
  const credential: RegistryCredential = { serverAddress, source: loaded.isEnv ? 'DOCKER_AUTH_CONFIG' : 'config.auths' };
  if (username !== undefined) credential.username = username;
  if (password !== undefined) credential.password = password;
  if (identityToken !== undefined) credential.identityToken = identityToken;
  return credential;
}

interface HelperResult {
  error: (Error & { code?: unknown; killed?: boolean }) | null;
  stdout: string;
  stderr: string;
}

/** Run `docker-credential-<helper> get` with the server address on stdin: Docker's helper protocol. */
async function runHelper(
  helper: string,
  serverAddress: string,
  env: Record<string, string | undefined>,
  configuredAs: string,
  loaded: LoadedConfig,
  source: 'credHelpers' | 'credsStore',
): Promise<RegistryCredential | undefined> {
  const command = `docker-credential-${helper}`;
  const where = `${configuredAs} in ${loaded.isEnv ? 'the environment variable' : 'the Docker config file'} ${loaded.where}`;
  // PATH lookup uses env.PATH because env is passed explicitly.
  const result = await new Promise<HelperResult>((resolve) => {
    const child = execFile(command, ['get'], { env, timeout: HELPER_TIMEOUT_MS, maxBuffer: 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ error, stdout, stderr }),
    );
    child.stdin?.on('error', () => {}); // EPIPE when the helper exits (or never started) first
    child.stdin?.end(serverAddress);
  });
  // Helpers answer "credentials not found in native keychain", usually with exit code 1.
  const answeredJson = !result.error && result.stdout.trim().startsWith('{');
  if (!answeredJson && /credentials not found/i.test(`${result.stdout}\n${result.stderr}`)) return undefined;
  const code = result.error?.code;
  if (code === 'ENOENT') {
    throw configError(`Docker credential helper ${command} is not on PATH; it is configured as ${where}. Install it or remove that setting`, loaded.where);
  }
  if (code === 'EACCES') throw configError(`Docker credential helper ${command} is not executable; it is configured as ${where}`, loaded.where);
  if (result.error) {
    const why = result.error.killed ? `did not answer within ${HELPER_TIMEOUT_MS / 1000}s` : `failed (exit code ${String(code)})`;
    // Helper diagnostics are useful and should not hold secrets; mask anything known anyway.
    const detail = redactSecrets(result.stderr.trim() || result.stdout.trim()).slice(0, 300);
    throw configError(`Docker credential helper ${command} ${why} for ${serverAddress}${detail ? `: ${detail}` : ''} (configured as ${where})`, loaded.where);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    // The output may hold a secret: never quote it.
    throw configError(`Docker credential helper ${command} printed output that is not JSON for ${serverAddress} (configured as ${where})`, loaded.where);
  }
  const secret = isObject(parsed) ? str(parsed.Secret) : undefined;
  const username = isObject(parsed) ? str(parsed.Username) : undefined;
  registerSecret(secret);
  if (secret === undefined) return undefined;
  // Docker's convention: Username '<token>' marks Secret as an identity (refresh) token.
  if (username === '<token>') return { serverAddress, identityToken: secret, source };
  const credential: RegistryCredential = { serverAddress, password: secret, source };
  if (username !== undefined) credential.username = username;
  return credential;
}

/** Keys of a map that name this registry, Docker's way: the exact server address first, then any spelling of the host. */
function matchingKeys(map: Record<string, unknown>, serverAddress: string, host: string): string[] {
  const rest = Object.keys(map).filter((key) => key !== serverAddress && keyHost(key) === host);
  return serverAddress in map ? [serverAddress, ...rest] : rest;
}

/**
 * Resolve credentials for a registry host (as in ImageRef.registry) the way Docker does.
 * Sources in order: DOCKER_AUTH_CONFIG, then <dockerConfigDir>/config.json; within each,
 * credHelpers[registry], then auths, then credsStore. A source with nothing for this registry
 * (including a helper answering "credentials not found") falls through to the next one.
 */
export async function resolveRegistryCredential(registry: string, opts: CredentialResolveOptions = {}): Promise<RegistryCredential | undefined> {
  const env = opts.env ?? process.env;
  const dir = opts.dockerConfigDir ?? env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), '.docker');
  const host = keyHost(registry);
  const serverAddress = registryServerAddress(host);

  for (const loaded of await loadConfigs(env, dir)) {
    const { config } = loaded;
    const helpers = (config.credHelpers ?? {}) as Record<string, unknown>;
    const helperKey = matchingKeys(helpers, serverAddress, host).find((key) => str(helpers[key]) !== undefined);
    const helper = helperKey === undefined ? undefined : str(helpers[helperKey]);
    if (helper !== undefined) {
      const found = await runHelper(helper, serverAddress, env, `credHelpers[${JSON.stringify(helperKey)}]`, loaded, 'credHelpers');
      if (found) return found;
    }
    const auths = config.auths ?? {};
    for (const key of matchingKeys(auths, serverAddress, host)) {
      const found = fromAuthEntry(auths[key]!, key, loaded, serverAddress);
      if (found) return found;
    }
    const store = str(config.credsStore);
    if (store !== undefined) {
      const found = await runHelper(store, serverAddress, env, 'credsStore', loaded, 'credsStore');
      if (found) return found;
    }
  }
  return undefined;
}

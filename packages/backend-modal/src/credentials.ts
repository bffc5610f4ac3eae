import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, remedied } from '@berth/core';
import { registerSecret } from '@berth/core/backend-kit';
import type { ModalBackendOptions } from './options.js';

import { BACKEND, IDENTITY } from './identity.js';

export { BACKEND, IDENTITY };
const DEFAULT_SERVER = 'https://api.modal.com';

export interface ModalCredentials {
  tokenId: string;
  tokenSecret: string;
  serverUrl: string;
  /** Where they came from, for messages (never the values). */
  source: string;
}

/**
 * The token, as Modal's own clients find it: the options, then MODAL_TOKEN_ID / MODAL_TOKEN_SECRET,
 * then the active profile of ~/.modal.toml (the one with `active = true`, else MODAL_PROFILE, else
 * the only one). The secret is registered for redaction before it goes anywhere.
 */
export function resolveCredentials(options: ModalBackendOptions): ModalCredentials {
  const env = options.modalConfigEnv ?? process.env;
  const path = options.configPath ?? env.MODAL_CONFIG_PATH ?? join(env.HOME ?? homedir(), '.modal.toml');
  const profile = readProfile(path, env.MODAL_PROFILE);
  const pick = (option: string | undefined, variable: string, key: string): [string | undefined, string] =>
    option !== undefined
      ? [option, 'options']
      : env[variable]
        ? [env[variable], variable]
        : profile?.values[key] !== undefined
          ? [profile.values[key], `${path} [${profile.name}]`]
          : [undefined, ''];
  const [tokenId, idSource] = pick(options.tokenId, 'MODAL_TOKEN_ID', 'token_id');
  const [tokenSecret] = pick(options.tokenSecret, 'MODAL_TOKEN_SECRET', 'token_secret');
  const [serverUrl] = pick(options.serverUrl, 'MODAL_SERVER_URL', 'server_url');
  if (!tokenId || !tokenSecret) {
    throw new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.tokenId',
      ...remedied(
        'modal-token',
        'pass options.tokenId and options.tokenSecret, set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET',
        (fix) => `no Modal token found: ${fix}, or run \`modal token new\` (looked in ${path})`,
      ),
    });
  }
  registerSecret(tokenSecret);
  return { tokenId, tokenSecret, serverUrl: (serverUrl ?? DEFAULT_SERVER).replace(/\/+$/, ''), source: idSource };
}

interface Profile {
  name: string;
  values: Record<string, string>;
}

/** ~/.modal.toml: [profile] sections of `key = "value"` / `key = true`; no other TOML is needed. */
function readProfile(path: string, wanted: string | undefined): Profile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const profiles: Profile[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+#.*$/, '').trim();
    const section = /^\[\s*"?([^"\]]+)"?\s*\]$/.exec(line);
    if (section) {
      profiles.push({ name: section[1]!, values: {} });
      continue;
    }
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+))$/.exec(line);
    if (pair && profiles.length) profiles.at(-1)!.values[pair[1]!] = pair[2] !== undefined ? pair[2].replace(/\\(.)/g, '$1') : (pair[3] ?? pair[4]!);
  }
  return (
    (wanted ? profiles.find((p) => p.name === wanted) : undefined) ??
    profiles.find((p) => p.values.active === 'true') ??
    (profiles.length === 1 ? profiles[0] : undefined)
  );
}

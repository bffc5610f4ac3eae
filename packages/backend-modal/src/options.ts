import type { MirrorRule } from '@berth/core';
import type { CreationLimits, PullCredentialSources } from '@berth/core/backend-kit';

export interface ModalBackendOptions extends Pick<PullCredentialSources, 'dockerConfigEnv'> {
  /** Default: MODAL_TOKEN_ID, else the active profile of ~/.modal.toml. */
  tokenId?: string;
  /** Default: MODAL_TOKEN_SECRET, else the active profile of ~/.modal.toml. */
  tokenSecret?: string;
  /** Default: MODAL_SERVER_URL, else the profile's server_url, else https://api.modal.com. */
  serverUrl?: string;
  /** PEM: a CA to trust besides the system's (a private deployment, a test server). */
  ca?: string | Buffer;
  /** The Modal app sandboxes belong to (made if missing). Default 'berth'. */
  appName?: string;
  /** The Modal environment. Default: the workspace's default. */
  environmentName?: string;
  /** Image reference rewrites, applied before anything else. */
  mirrors?: readonly MirrorRule[];
  /**
   * Bound sandbox creation per backend instance. Default: 5 per second (Modal's documented creation
   * rate), 32 at once.
   */
  creation?: CreationLimits;
  /** Where ~/.modal.toml is looked for (tests). Default: MODAL_CONFIG_PATH, else ~/.modal.toml. */
  configPath?: string;
  /** Environment variables the credentials are read from. Default process.env. */
  env?: Record<string, string | undefined>;
  /**
   * Registries preflight may ask directly whether an image is pullable. Default: every registry.
   * Also used when a sandbox's container cannot be loaded, to tell a private image pulled without
   * credentials from an infrastructure failure.
   */
  probeRegistries?: readonly string[];
}

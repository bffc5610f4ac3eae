import { COMMON_OPTION_NAMES, optionNames, type CommonBackendOptions, type DefaultLifetimeOption, type ProbeRegistriesOption } from '@berth/core/backend-kit';
import type { ClientType } from './wire/index.js';

/**
 * Modal's options: the common ones (mirrors, creation: default 5 per second and 32 at once, as
 * Modal documents its creation rate; labels as sandbox tags; namePrefix; dockerConfigEnv),
 * probeRegistries, defaultLifetimeMs (the sandbox's timeout when the spec sets no lifetime:
 * default and at most 24 h, Modal's cap; never off), and where Modal is.
 */
export interface ModalBackendOptions extends CommonBackendOptions, ProbeRegistriesOption, DefaultLifetimeOption {
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
  /** Where ~/.modal.toml is looked for (tests). Default: MODAL_CONFIG_PATH, else ~/.modal.toml. */
  configPath?: string;
  /** Where MODAL_TOKEN_ID, MODAL_TOKEN_SECRET, MODAL_SERVER_URL, MODAL_PROFILE and MODAL_CONFIG_PATH are read. Default process.env. */
  modalConfigEnv?: Record<string, string | undefined>;
  /**
   * Sent as x-modal-client-version: the version of Modal's Python SDK whose protocol berth speaks.
   * Default '1.6.4', the SDK berth's wire schema is checked against. Modal's server decides by it
   * whether to serve, warn or refuse; set it only when Modal refuses the default and names a
   * version berth's protocol still works with (README, "Client identity").
   */
  clientVersion?: string;
  /** Sent as x-modal-client-type: a ClientType name ('CLIENT_TYPE_CLIENT') or its number. Default CLIENT_TYPE_CLIENT (1), as Modal's Python SDK. */
  clientType?: ClientType;
  /**
   * Which generation of Modal's sandbox RPCs berth uses: 'v2' (default; SandboxCreateV2 and the
   * rest, with an x-modal-auth-token from AuthTokenGet, as Modal's Python SDK 1.6.4 does) or 'v1'
   * (SandboxCreate and the rest, berth's protocol before). GPU sandboxes use V1 either way, as the
   * SDK's do (README, "Protocol").
   */
  sandboxApi?: 'v1' | 'v2';
  /**
   * How long Modal keeps a snapshot (env.snapshot()) that is never removed: Modal's images carry no
   * labels for a sweep to find, so this expiry (the snapshot's TTL) is the backstop. Default 7 days.
   */
  snapshotLifetimeMs?: number;
}

/** A snapshot's expiry when options.snapshotLifetimeMs is unset. */
export const DEFAULT_SNAPSHOT_LIFETIME_MS = 7 * 24 * 3600_000;

/** Every option of createModalBackend by name: any other is refused. */
export const OPTION_NAMES = optionNames<ModalBackendOptions>()(
  ...COMMON_OPTION_NAMES,
  'probeRegistries',
  'defaultLifetimeMs',
  'tokenId',
  'tokenSecret',
  'serverUrl',
  'ca',
  'appName',
  'environmentName',
  'configPath',
  'modalConfigEnv',
  'clientVersion',
  'clientType',
  'sandboxApi',
  'snapshotLifetimeMs',
);

/** What the guardian process is given to rebuild this backend (the credentials this process resolved). */
export interface ModalGuardianConfig {
  tokenId: string;
  tokenSecret: string;
  serverUrl: string;
  ca?: string;
  appName?: string;
  environmentName?: string;
  clientVersion?: string;
  clientType?: ClientType;
  sandboxApi?: 'v1' | 'v2';
}

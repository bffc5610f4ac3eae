import {
  COMMON_OPTION_NAMES,
  optionNames,
  type AllowlistNamesOption,
  type CommonBackendOptions,
  type PullCredentialSources,
  type PullPolicyOption,
  type TransferMode,
} from '@berth/core/backend-kit';

/**
 * The common options (mirrors; creation, default 16 at once: see engine-limits.ts; labels and
 * namePrefix on containers; dockerConfigEnv), pullPolicy, and where the engine is.
 */
export interface DockerBackendOptions extends CommonBackendOptions, PullCredentialSources, PullPolicyOption, AllowlistNamesOption {
  /** Where the engine is. Default: DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
  /**
   * Run Docker's init (tini) as PID 1. Default false: berth's own PID 1 (a shell waiting in a
   * loop) already reaps orphans, and without tini an image that cannot run /bin/sh fails at
   * start() for certain, rather than a moment after it.
   */
  init?: boolean;
  /**
   * 'native' (default): files move through the engine's archive API. 'exec': tar streamed over
   * exec, the way backends without an archive API move them (the image then needs tar).
   */
  transfers?: TransferMode;
  /**
   * The bridge network a sandbox with network 'public' joins (one made with `docker network
   * create`). Default: the engine's default bridge. One bridge holds about a thousand sandboxes
   * (a Linux bridge's 1,023 ports): backend instances on bridges of their own hold more at once.
   */
  publicNetwork?: string;
  /**
   * An image with `iptables-restore` (e.g. FROM debian:bookworm-slim, apt-get install iptables),
   * for egress allowlists (`network: { allow }`): berth runs it briefly in a sandbox's network
   * namespace, with NET_ADMIN there only, to write the sandbox's packet filter. Default: an image
   * berth makes on first use and keeps (`berth/egress:<key>`, labelled `berth.egress`): from this
   * machine's own iptables when the engine runs here, else built by the engine from Alpine's
   * iptables (which needs Docker Hub). Set it on hosts that can do neither (offline, locked down).
   */
  egressImage?: string;
  /**
   * Allowlist names and `*.domain` wildcards matched by name at berth's egress proxy (the kit's
   * EgressProxy, in this process, on the public bridge's gateway) rather than by the addresses
   * berth resolves: the sandbox's DNS answered for allowed names only, TLS (443) let through by
   * server name and HTTP (80) by Host, to the name as berth resolves it. Needs the engine on this
   * machine. Default false. Experimental: on user-defined networks (options.publicNetwork) the
   * engine's own resolver's nat rules can come before berth's after a network switch.
   */
  egressProxy?: boolean;
}

/** Every option of createDockerBackend by name (unknown ones are refused); defaultLifetimeMs is refused by its own message. */
export const OPTION_NAMES: readonly string[] = [
  ...optionNames<DockerBackendOptions>()(
    ...COMMON_OPTION_NAMES,
    'registrySecrets',
    'ecrLogin',
    'pullPolicy',
    'socketPath',
    'host',
    'port',
    'protocol',
    'init',
    'transfers',
    'publicNetwork',
    'egressImage',
    'egressProxy',
    'resolveHost',
    'refreshNamesMs',
  ),
  'defaultLifetimeMs',
];

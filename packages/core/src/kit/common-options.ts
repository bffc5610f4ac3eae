import { ConfigError } from '../errors.js';
import type { MirrorRule } from '../image-ref.js';
import type { CreationLimits } from './creation-limiter.js';

/**
 * The options every backend has, under one name each. A backend's options type extends this and
 * adds only what its engine needs.
 */
export interface CommonBackendOptions {
  /** Rewrite image references before they are pulled, e.g. docker.io/ -> mirror:5000/ (first match wins). */
  mirrors?: readonly MirrorRule[];
  /** Bound sandbox creation per backend instance (each backend documents its default). */
  creation?: CreationLimits;
  /** Labels on every sandbox (tags on Modal); berth's own labels always win. */
  labels?: Record<string, string>;
  /** Prefix of environment ids and sandbox names. Default 'berth'. */
  namePrefix?: string;
  /**
   * Where Docker-config credentials are looked up: the variables DOCKER_CONFIG, DOCKER_AUTH_CONFIG
   * and HOME (and the PATH credential helpers run with). Default process.env. Not the sandbox's
   * environment: that is spec.env.
   */
  dockerConfigEnv?: Record<string, string | undefined>;
  /**
   * Start a guardian at the first sandbox: a detached process that removes this process's
   * sandboxes (and their per-run resources) within seconds of its end, however it ends (SIGKILL
   * too). Default true, unless the environment variable BERTH_GUARDIAN is 0, false, off or no.
   */
  guardian?: boolean;
}

/** For backends whose engine pulls images itself (Docker, Kubernetes). */
export interface PullPolicyOption {
  /** 'if-missing' (default) pulls only images not present; 'always' every start; 'never' never. */
  pullPolicy?: 'if-missing' | 'always' | 'never';
}

/** For backends that ask registries directly whether an image is pullable (Kubernetes, Modal). */
export interface ProbeRegistriesOption {
  /** Registries berth may ask directly (preflight, and telling a private image from a failure). Default: every registry. */
  probeRegistries?: readonly string[];
}

/**
 * Refuse options that were renamed, naming the new name, as a ConfigError before any I/O: a
 * renamed option silently ignored would change what runs.
 */
export function refuseRenamedOptions(options: object, renamed: Readonly<Record<string, string>>, backend: string, factory: string): void {
  for (const [old, now] of Object.entries(renamed)) {
    if (old in options) {
      throw new ConfigError({ operation: 'config', backend, path: `options.${old}`, message: `${factory}'s ${old} option is now ${now}` });
    }
  }
}

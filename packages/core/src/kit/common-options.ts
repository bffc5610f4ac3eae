import { ConfigError } from '../errors.js';
import { checkOptionNames, optionNames } from './option-names.js';
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
 * For backends whose service ends a sandbox by itself at a deadline (Kubernetes, Modal): the
 * backstop for a sandbox whose whole machine is gone, guardian and all. One name on every backend
 * that has it: the default of the spec's `timeouts.lifetimeMs`, in the same unit.
 */
export interface DefaultLifetimeOption {
  /**
   * The lifetime, in ms, of a sandbox whose spec sets no `timeouts.lifetimeMs`, enforced by the
   * service itself (Kubernetes' activeDeadlineSeconds, Modal's timeout), so it ends even when
   * nothing of berth is left to remove it. The spec's own lifetime always wins. Default 24 h.
   * `false`: no default (Kubernetes only; Modal always has a timeout, at most 24 h).
   */
  defaultLifetimeMs?: number | false;
}

/**
 * For backends that enforce an allowlist's hostnames by the addresses berth resolves for them
 * (Docker, Kubernetes): one name for each option on both.
 */
export interface AllowlistNamesOption {
  /** IPv4 addresses for an allowlist's hostnames. Default: the runner's resolver (getaddrinfo, IPv4). */
  resolveHost?: (name: string) => Promise<readonly string[]>;
  /**
   * How often, in ms, a live sandbox's allowlist hostnames are resolved again; when their addresses
   * changed, the sandbox's filter and /etc/hosts lines are rewritten (event 'network'). Default
   * 60000; 0: resolved only when the allowlist is applied.
   */
  refreshNamesMs?: number;
}

/** `refreshNamesMs` when unset: a minute. */
export const DEFAULT_REFRESH_NAMES_MS = 60_000;

/** options.refreshNamesMs checked before any I/O: ms, 0 for never. */
export function refreshNamesMs(options: AllowlistNamesOption, at: { backend: string; factory: string }): number {
  const value: unknown = options.refreshNamesMs;
  if (value === undefined) return DEFAULT_REFRESH_NAMES_MS;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || (value > 0 && value < 100))
    throw new ConfigError({
      operation: 'config',
      backend: at.backend,
      path: 'options.refreshNamesMs',
      message: `${at.factory}'s refreshNamesMs is a whole number of milliseconds, 100 or more, or 0 to resolve names only when an allowlist is applied; got ${JSON.stringify(value) ?? String(value)}`,
    });
  return value;
}

/** `defaultLifetimeMs` when unset: 24 h (Modal's longest sandbox timeout). */
export const DEFAULT_LIFETIME_MS = 24 * 3600 * 1000;

/**
 * The default lifetime an options object asks for, checked before any I/O: ms, or undefined for
 * none (`false`). A value the backend cannot take is a ConfigError naming the option.
 */
export function defaultLifetimeMs(
  options: DefaultLifetimeOption,
  at: { backend: string; factory: string; maxMs?: number; offAllowed: boolean; why?: string },
): number | undefined {
  const value: unknown = options.defaultLifetimeMs;
  const refuse = (message: string) =>
    new ConfigError({ operation: 'config', backend: at.backend, path: 'options.defaultLifetimeMs', message: `${at.factory}'s defaultLifetimeMs ${message}` });
  if (value === undefined) return DEFAULT_LIFETIME_MS;
  if (value === false) {
    if (at.offAllowed) return undefined;
    throw refuse(`cannot be false: ${at.why ?? 'this backend always ends a sandbox at a deadline'}`);
  }
  const max = at.maxMs === undefined ? '' : ` up to ${at.maxMs} (${describeMs(at.maxMs)})`;
  const off = at.offAllowed ? ', or false for none' : '';
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    throw refuse(`is a whole number of milliseconds above 0${max}${off}; got ${JSON.stringify(value) ?? String(value)}`);
  if (at.maxMs !== undefined && value > at.maxMs) throw refuse(`is at most ${at.maxMs} (${describeMs(at.maxMs)})${at.why ? `: ${at.why}` : ''}; got ${value}`);
  return value;
}

/** A duration for people: '24 h', '90 min', '3 s', '250 ms'. */
export function describeMs(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}

/**
 * A factory's options checked by name before any I/O, as a ConfigError: one that was renamed names
 * its new name; one the backend does not have names what was likely meant (a misspelt option
 * silently ignored would change what runs). `known` comes from optionNames<the options type>().
 */
export function checkFactoryOptions(
  options: object,
  at: { known: readonly string[]; renamed?: Readonly<Record<string, string>>; backend: string; factory: string },
): void {
  for (const [old, now] of Object.entries(at.renamed ?? {})) {
    if (old in options) {
      throw new ConfigError({ operation: 'config', backend: at.backend, path: `options.${old}`, message: `${at.factory}'s ${old} option is now ${now}` });
    }
  }
  checkOptionNames(options, at.known, { what: at.factory, path: 'options', backend: at.backend });
}

/** The options every backend has (CommonBackendOptions), by name. */
export const COMMON_OPTION_NAMES = optionNames<CommonBackendOptions>()('mirrors', 'creation', 'labels', 'namePrefix', 'dockerConfigEnv', 'guardian');

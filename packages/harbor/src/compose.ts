import { isAbsolute, relative, resolve } from 'node:path';
import { SERVICE_NAME, type ServiceCondition, type ServiceInput, type VolumeMount } from '@berth/core';
import { parse } from 'yaml';
import type { z } from 'zod';
import { namedVolumes, volumesOf } from './compose-volumes.js';
import { ComposeFileSchema, ComposeMainSchema, ComposeServiceSchema, composeIssue, withoutExtensions } from './compose-schema.js';
import type { HostEnv } from './env-template.js';
import { fieldError } from './task-toml.js';

/**
 * A harbor task's environment/docker-compose.yaml, read as harbor's docker environment runs it:
 * `main` is the sandbox (harbor gives it the task's image and `sleep infinity`), every other service
 * becomes one of spec.services. Values are interpolated as compose does (`${VAR}`, `${VAR:-d}`,
 * `${VAR-d}`, `${VAR:?e}`, `$VAR`, `$$`) from what harbor hands compose: the host's environment,
 * the task's [environment.env] over it, and harbor's own variables over both (CONTEXT_DIR,
 * MAIN_IMAGE_NAME, CPUS, MEMORY when the task sets them). Keys berth does not run are refused by
 * name before any I/O; keys that change nothing here are accepted (listed in IGNORED).
 */
export interface ComposeEnvironment {
  services: Record<string, ServiceInput>;
  /** `main`'s environment: the sandbox's, under the task's own [environment.env]. */
  mainEnv: Record<string, string>;
  /** `main`'s depends_on: the sandbox's own (spec.dependsOn; a service it waits to complete is a one-shot). */
  mainDependsOn: Record<string, ServiceCondition>;
  /** `main`'s named volumes: the sandbox's `{ type: 'volume' }` mounts (spec.mounts). */
  mainMounts: VolumeMount[];
}

/** What harbor puts in compose's environment (compose_env.py), besides the host's and the task's. */
export interface ComposeVariables {
  contextDir: string;
  mainImageName: string;
  cpus?: number;
  memoryMb?: number;
}

export { IGNORED } from './compose-schema.js';

export function readCompose(file: string, text: string, vars: ComposeVariables, host: HostEnv, taskEnv: Readonly<Record<string, string>>): ComposeEnvironment {
  const fail = (at: string, message: string) => fieldError(file, at, message);
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (error) {
    throw fieldError(file, 'docker-compose.yaml', `is not YAML: ${(error as Error).message}`, error);
  }
  const env: HostEnv = {
    ...host,
    ...taskEnv,
    CONTEXT_DIR: vars.contextDir,
    MAIN_IMAGE_NAME: vars.mainImageName,
    ...(vars.cpus !== undefined ? { CPUS: String(vars.cpus) } : {}),
    ...(vars.memoryMb !== undefined ? { MEMORY: `${vars.memoryMb}M` } : {}),
  };
  const interpolated = interpolate(raw, env, (at, message) => fail(at, message), '');
  if (!isMap(interpolated)) throw fail('docker-compose.yaml', 'is not a compose file (a mapping with services)');
  const root = withoutExtensions(interpolated);
  check(ComposeFileSchema, root, '', 'is a compose key berth does not run', fail);
  const networks = root.networks;
  if (networks !== undefined && (!isMap(networks) || Object.keys(networks).some((n) => n !== 'default')))
    throw fail('networks', 'other than default are not run by berth: every service shares one network with the sandbox, reached by name; remove them');
  const named = namedVolumes(root.volumes, fail);
  const servicesIn = root.services;
  if (!isMap(servicesIn)) throw fail('services', 'must be a mapping of service names');

  let mainEnv: Record<string, string> = {};
  let mainDependsOn: Record<string, ServiceCondition> = {};
  let mainMounts: VolumeMount[] = [];
  const services: Record<string, ServiceInput> = {};
  for (const [name, value] of Object.entries(servicesIn)) {
    const at = `services.${name}`;
    if (!isMap(value)) throw fail(at, 'must be a mapping');
    if (name === 'main') {
      check(ComposeMainSchema, withoutExtensions(value), at, "is not run by berth on main: harbor's main is the sandbox, with the task's image", fail);
      checkMain(value, vars, fail);
      mainEnv = environmentOf(value.environment, env, `${at}.environment`, fail);
      if (value.depends_on !== undefined) mainDependsOn = dependsOf(value.depends_on, `${at}.depends_on`, fail);
      if (value.volumes !== undefined) mainMounts = volumesOf(value.volumes, named, `${at}.volumes`, fail);
      continue;
    }
    if (!SERVICE_NAME.test(name)) throw fail(at, 'is not a name berth can give a service: lowercase letters, digits and "-" (a DNS label)');
    check(ComposeServiceSchema, withoutExtensions(value), at, 'is a compose key berth does not run for a service', fail);
    services[name] = serviceOf(value, at, env, fail);
    if (value.volumes !== undefined) {
      const mounts = volumesOf(value.volumes, named, `${at}.volumes`, fail);
      if (mounts.length) services[name]!.mounts = mounts;
    }
  }
  // A service waiting for main: main is up before any service here (the sandbox starts first).
  for (const service of Object.values(services)) if (service.dependsOn) delete service.dependsOn.main;
  return { services, mainEnv, mainDependsOn, mainMounts };
}

type Fail = (at: string, message: string) => Error;

/** `value` against a compose schema; its first problem refused by path. */
function check(schema: z.ZodType, value: unknown, at: string, unknownKey: string, fail: Fail): void {
  const result = schema.safeParse(value);
  if (result.success) return;
  const { path, message } = composeIssue(result.error, at, unknownKey);
  throw fail(path || 'docker-compose.yaml', message);
}

function checkMain(main: Record<string, unknown>, vars: ComposeVariables, fail: Fail): void {
  if (main.image !== undefined && main.image !== vars.mainImageName)
    throw fail(
      'services.main.image',
      "is the task's image, as harbor gives it (${MAIN_IMAGE_NAME}, or docker_image); another image for main is not run by berth",
    );
  if (main.build !== undefined) {
    const context = typeof main.build === 'string' ? main.build : isMap(main.build) ? main.build.context : undefined;
    if (typeof context !== 'string' || resolve(vars.contextDir, context) !== resolve(vars.contextDir))
      throw fail('services.main.build', "is the task's environment/ (harbor builds it); another build for main is not run by berth");
  }
  if (
    main.networks !== undefined &&
    !(Array.isArray(main.networks)
      ? main.networks.every((n) => n === 'default')
      : isMap(main.networks) && Object.keys(main.networks).every((n) => n === 'default'))
  )
    throw fail('services.main.networks', 'other than default are not run by berth');
}

function serviceOf(s: Record<string, unknown>, at: string, env: HostEnv, fail: Fail): ServiceInput {
  const contextDir = env.CONTEXT_DIR!;
  let image: ServiceInput['image'];
  if (s.build !== undefined) {
    const build = typeof s.build === 'string' ? { context: s.build } : isMap(s.build) ? s.build : undefined;
    if (!build || typeof build.context !== 'string') throw fail(`${at}.build`, 'is a context directory, or { context, dockerfile?, target?, args? }');
    for (const key of Object.keys(build))
      if (!['context', 'dockerfile', 'target', 'args'].includes(key)) throw fail(`${at}.build.${key}`, 'is not run by berth');
    const context = isAbsolute(build.context) ? build.context : resolve(contextDir, build.context);
    if (relative(contextDir, context).startsWith('..')) throw fail(`${at}.build.context`, `(${build.context}) is outside the task's environment/`);
    const args = build.args === undefined ? {} : environmentOf(build.args, env, `${at}.build.args`, fail);
    image = {
      build: {
        context,
        ...(typeof build.dockerfile === 'string' ? { dockerfile: build.dockerfile } : {}),
        ...(typeof build.target === 'string' ? { target: build.target } : {}),
        ...(Object.keys(args).length ? { args } : {}),
      },
    };
  } else if (typeof s.image === 'string' && s.image) image = s.image;
  else throw fail(at, 'has neither image nor build');
  const service: ServiceInput = { image };
  const argv = (value: unknown, key: string) => {
    if (typeof value === 'string') return shellWords(value, () => fail(`${at}.${key}`, 'has an unterminated quote'));
    if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) return value.map(String);
    throw fail(`${at}.${key}`, 'is a string or a list of strings');
  };
  if (s.command !== undefined && s.command !== null) service.command = argv(s.command, 'command');
  if (s.entrypoint !== undefined && s.entrypoint !== null) service.entrypoint = argv(s.entrypoint, 'entrypoint');
  if (s.environment !== undefined) service.env = environmentOf(s.environment, env, `${at}.environment`, fail);
  if (s.user !== undefined) service.user = String(s.user);
  if (typeof s.working_dir === 'string') service.workdir = s.working_dir;
  const ports = [...portsOf(s.expose, `${at}.expose`, fail, false), ...portsOf(s.ports, `${at}.ports`, fail, true)];
  if (ports.length) service.ports = [...new Set(ports)];
  const aliases = aliasesOf(s.networks, `${at}.networks`, fail);
  if (aliases.length) service.aliases = aliases;
  if (s.healthcheck !== undefined) {
    const check = healthcheckOf(s.healthcheck, `${at}.healthcheck`, fail);
    if (check) service.healthcheck = check;
  }
  if (s.depends_on !== undefined) service.dependsOn = dependsOf(s.depends_on, `${at}.depends_on`, fail);
  const resources = resourcesOf(s, at, fail);
  if (Object.keys(resources).length) service.resources = resources;
  return service;
}

/** compose's `environment`: a list of NAME=value (or NAME, taken from the environment) or a mapping. */
function environmentOf(value: unknown, env: HostEnv, at: string, fail: Fail): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (key: string, v: unknown) => {
    if (v === null || v === undefined) {
      const from = env[key];
      if (from !== undefined) out[key] = from;
    } else out[key] = String(v);
  };
  if (Array.isArray(value)) {
    for (const entry of value) {
      const text = String(entry);
      const eq = text.indexOf('=');
      if (eq === -1) put(text, null);
      else out[text.slice(0, eq)] = text.slice(eq + 1);
    }
  } else if (isMap(value)) for (const [key, v] of Object.entries(value)) put(key, v);
  else if (value !== null && value !== undefined) throw fail(at, 'is a list of NAME=value or a mapping');
  return out;
}

function portsOf(value: unknown, at: string, fail: Fail, published: boolean): number[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw fail(at, 'is a list');
  return value.map((entry) => {
    const text = isMap(entry) ? String(entry.target) : String(entry);
    // "8080", "8080/tcp", and for ports "host:container" or "ip:host:container": the container's port.
    const container = (published ? text.split(':').pop()! : text).split('/')[0]!;
    const port = Number(container);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw fail(at, `has ${JSON.stringify(entry)}, not a port (ranges are not run by berth)`);
    return port;
  });
}

function aliasesOf(value: unknown, at: string, fail: Fail): string[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) {
    if (value.every((n) => n === 'default')) return [];
    throw fail(at, 'name networks other than default: berth runs every service on one network with the sandbox');
  }
  if (!isMap(value)) throw fail(at, 'is a list or a mapping of networks');
  const aliases: string[] = [];
  for (const [network, config] of Object.entries(value)) {
    if (network !== 'default') throw fail(`${at}.${network}`, 'is a network other than default: berth runs every service on one network with the sandbox');
    if (config === null || config === undefined) continue;
    if (!isMap(config)) throw fail(`${at}.${network}`, 'is a mapping');
    for (const key of Object.keys(config)) if (key !== 'aliases') throw fail(`${at}.${network}.${key}`, 'is not run by berth (only aliases)');
    if (Array.isArray(config.aliases)) aliases.push(...config.aliases.map(String));
  }
  return aliases;
}

function healthcheckOf(value: unknown, at: string, fail: Fail): ServiceInput['healthcheck'] | undefined {
  if (!isMap(value)) throw fail(at, 'is a mapping');
  if (value.disable === true) return undefined;
  const test = value.test;
  let command: string[];
  if (typeof test === 'string') command = ['sh', '-c', test];
  else if (Array.isArray(test) && test.length > 0) {
    const [kind, ...rest] = test.map(String);
    if (kind === 'NONE') return undefined;
    if (kind === 'CMD') command = rest;
    else if (kind === 'CMD-SHELL') command = ['sh', '-c', rest.join(' ')];
    else throw fail(`${at}.test`, 'starts with CMD, CMD-SHELL or NONE');
  } else throw fail(`${at}.test`, 'is a command string or a list starting with CMD or CMD-SHELL');
  if (command.length === 0) throw fail(`${at}.test`, 'has no command');
  const ms = (key: string) =>
    value[key] === undefined ? undefined : durationMs(value[key], () => fail(`${at}.${key}`, `is a duration such as 2s, 1m30s or 500ms`));
  const check: NonNullable<ServiceInput['healthcheck']> = { command };
  const interval = ms('interval');
  if (interval !== undefined) check.intervalMs = interval;
  const timeout = ms('timeout');
  if (timeout !== undefined) check.timeoutMs = timeout;
  const startPeriod = ms('start_period');
  if (startPeriod !== undefined) check.startPeriodMs = startPeriod;
  const startInterval = ms('start_interval');
  if (startInterval !== undefined) check.startIntervalMs = startInterval;
  if (value.retries !== undefined) check.retries = Number(value.retries);
  return check;
}

const CONDITIONS: Record<string, ServiceCondition> = {
  service_started: 'started',
  service_healthy: 'healthy',
  service_completed_successfully: 'completed',
};

function dependsOf(value: unknown, at: string, fail: Fail): Record<string, ServiceCondition> {
  if (Array.isArray(value)) return Object.fromEntries(value.map((n) => [String(n), 'started' as const]));
  if (!isMap(value)) throw fail(at, 'is a list or a mapping');
  const out: Record<string, ServiceCondition> = {};
  for (const [dep, config] of Object.entries(value)) {
    const condition = isMap(config) && config.condition !== undefined ? String(config.condition) : 'service_started';
    const mapped = CONDITIONS[condition];
    if (!mapped) throw fail(`${at}.${dep}.condition`, `is ${condition}: one of ${Object.keys(CONDITIONS).join(', ')}`);
    out[dep] = mapped;
  }
  return out;
}

function resourcesOf(s: Record<string, unknown>, at: string, fail: Fail): NonNullable<ServiceInput['resources']> {
  const out: NonNullable<ServiceInput['resources']> = {};
  const limits = isMap(s.deploy) && isMap(s.deploy.resources) && isMap(s.deploy.resources.limits) ? s.deploy.resources.limits : {};
  if (isMap(s.deploy))
    for (const key of Object.keys(s.deploy)) if (key !== 'resources') throw fail(`${at}.deploy.${key}`, 'is not run by berth (only resources.limits)');
  const cpus = s.cpus ?? limits.cpus;
  if (cpus !== undefined && cpus !== '') out.cpus = Number(cpus);
  const memory = s.mem_limit ?? limits.memory;
  if (memory !== undefined && memory !== '') {
    const mb = memoryMb(String(memory));
    if (mb === undefined) throw fail(`${at}.${s.mem_limit !== undefined ? 'mem_limit' : 'deploy.resources.limits.memory'}`, 'is a size such as 512m or 2g');
    out.memoryMb = mb;
  }
  return out;
}

function memoryMb(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([bkmg]?)b?$/i.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2]!.toLowerCase();
  const mb = unit === 'g' ? n * 1024 : unit === 'm' ? n : unit === 'k' ? n / 1024 : n / 1024 / 1024;
  return Math.max(1, Math.ceil(mb));
}

/** compose's durations: 1h2m3s4ms5us, or a number of seconds. */
export function durationMs(value: unknown, fail: () => Error): number {
  if (typeof value === 'number') return Math.round(value * 1000);
  const text = String(value).trim();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw fail();
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, ns: 0.000001 };
  return Math.max(1, Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0)));
}

/** Splits a command string into words as compose does (shell-like quoting, no expansion). */
function shellWords(text: string, fail: () => Error): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < text.length) word += text[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw fail();
  if (inWord) words.push(word);
  return words;
}

/** compose's interpolation over every string of the file (keys stay as written). */
function interpolate(value: unknown, env: HostEnv, fail: Fail, at: string): unknown {
  if (typeof value === 'string') return substitute(value, env, (message) => fail(at || 'docker-compose.yaml', message));
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, fail, `${at}[${i}]`));
  if (isMap(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, fail, at ? `${at}.${k}` : k)]));
  return value;
}

function substitute(text: string, env: HostEnv, fail: (message: string) => Error): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced, op, arg, bare) => {
    if (whole === '$$') return '$';
    const name = (braced ?? bare) as string;
    const value = env[name];
    if (op === undefined) return value ?? '';
    const unset = op.startsWith(':') ? value === undefined || value === '' : value === undefined;
    if (op.endsWith('-')) return unset ? substitute(arg ?? '', env, fail) : value!;
    if (unset) throw fail(`needs the variable ${name}: ${arg || 'it is not set'}`);
    return value!;
  });
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

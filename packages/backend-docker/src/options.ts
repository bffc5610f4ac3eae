import type { MirrorRule } from '@berth/core';
import type { RegistryAuthSources } from './pull.js';

export interface DockerBackendOptions extends RegistryAuthSources {
  /** Where the engine is. Default: DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
  /** 'if-missing' (default) pulls only images not present; 'always' pulls every start; 'never' never pulls. */
  pullPolicy?: 'if-missing' | 'always' | 'never';
  /** Rewrite image references before pulling, e.g. docker.io/swebench/ -> mirror:5001/swebench/. */
  mirrors?: readonly MirrorRule[];
  /** Run Docker's init (tini) as PID 1 so orphaned processes are reaped. Default true. */
  init?: boolean;
  /** Labels added to every container (berth's own always win). */
  labels?: Record<string, string>;
  /** Prefix of container names. Default 'berth'. */
  namePrefix?: string;
}

import type { MirrorRule } from '@berth/core';
import type { CreationLimits, PullCredentialSources, TransferMode } from '@berth/core/backend-kit';

export interface DockerBackendOptions extends PullCredentialSources {
  /** Where the engine is. Default: DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
  /** 'if-missing' (default) pulls only images not present; 'always' pulls every start; 'never' never pulls. */
  pullPolicy?: 'if-missing' | 'always' | 'never';
  /** Rewrite image references before pulling, e.g. docker.io/swebench/ -> mirror:5001/swebench/. */
  mirrors?: readonly MirrorRule[];
  /**
   * Run Docker's init (tini) as PID 1. Default false: berth's own PID 1 (a shell waiting in a
   * loop) already reaps orphans, and without tini an image that cannot run /bin/sh fails at
   * start() for certain, rather than a moment after it.
   */
  init?: boolean;
  /** Labels added to every container (berth's own always win). */
  labels?: Record<string, string>;
  /** Prefix of container names. Default 'berth'. */
  namePrefix?: string;
  /**
   * 'native' (default): files move through the engine's archive API. 'exec': tar streamed over
   * exec, the way backends without an archive API move them (the image then needs tar).
   */
  transfers?: TransferMode;
  /** Bound container creation per backend instance. Default: no limit (the local engine copes). */
  creation?: CreationLimits;
}

import type { I6pnNetwork } from './i6pn.js';
// What the simulator keeps of one sandbox, and what its sandboxes need from the rest of it: apart
// from sandboxes.ts, so that container-spec.ts can read a record without importing its keeper.
import type Docker from 'dockerode';
import type { Msg } from './codec.js';
import type { ExecProcess } from './exec.js';
import type { Images } from './images.js';
import type { SandboxNetwork } from './network.js';
import type { SandboxVersion } from './sandbox-ids.js';
import type { SandboxStdio } from './sandbox-stdio.js';
import type { Changes, GenericResult } from './util.js';

export interface SandboxRecord {
  id: string;
  version: SandboxVersion;
  appId: string;
  name?: string;
  tags: Array<{ tag_name: string; tag_value: string }>;
  imageId: string;
  definition: Msg;
  /** Its network policy and whether the container is on the bridge (network.ts). */
  network: SandboxNetwork;
  createdAt: number;
  state: 'pending' | 'running' | 'ended';
  taskId?: string;
  container?: Docker.Container;
  result?: GenericResult;
  /** Forgotten by a fault: NOT_FOUND from now on, even for calls already waiting. */
  vanished: boolean;
  changes: Changes;
  timers: NodeJS.Timeout[];
  lastActivity: number;
  execs: Map<string, Promise<ExecProcess>>;
  /** Started execs: one still running keeps an idle timeout away. */
  procs: ExecProcess[];
  removal?: Promise<void>;
  /** Set when the sandbox starts to end; `state` becomes 'ended' once its container is gone. */
  ending?: GenericResult;
  ended?: Promise<void>;
  /** Environment from V2 secret_sources (secret ids and inline maps), after the definition's secrets. */
  sourceEnv: string[];
  /** A V2 sandbox's own stdio, attached before its container starts (sandbox-stdio.ts). */
  stdio?: SandboxStdio;
  startedAt?: number;
  finishedAt?: number;
}

export interface SandboxDeps {
  docker: Docker;
  images: Images;
  appExists: (appId: string) => boolean;
  secretEnv: (secretId: string) => Record<string, string> | undefined;
  labels: (simId: string) => Record<string, string>;
  longPollMs: () => number;
  slowLongPollMs: () => number;
  killsAs: () => 'FAILURE' | 'INTERNAL_FAILURE';
  cpus: number;
  /** The i6pn network of i6pn_enabled sandboxes. */
  i6pn: I6pnNetwork;
}

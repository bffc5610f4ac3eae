import type { NetworkAllowlist, ServiceCondition, ServiceInput, VolumeMount } from '@berth/core';
import type { HarborExceptionInfo } from './exception-info.js';

/** A phase's network, as berth applies it: harbor's 'public', 'no-network' as 'none', or "allowlist" as `{ allow: allowed_hosts }`. */
export type HarborNetwork = 'public' | 'none' | NetworkAllowlist;

/** Harbor's `[environment.healthcheck]`: run until it passes before the agent starts. */
export interface HarborHealthcheck {
  command: string;
  intervalSec: number;
  timeoutSec: number;
  startPeriodSec: number;
  startIntervalSec: number;
  retries: number;
}

/** One `artifacts` entry: a path in the sandbox, copied into the attempt's artifacts/ directory. */
export interface HarborArtifact {
  source: string;
  /** Relative to the attempt's artifacts/ directory; default: the source's base name. */
  destination?: string;
}

/**
 * One `[[verifier.collect]]` command: run in the agent's sandbox after the agent, before the
 * artifacts are copied out (so it can write files for them), best effort.
 */
export interface HarborCollectCommand {
  /** Run with bash where the image has it (as harbor), else sh. */
  command: string;
  /** `timeout_sec`, harbor's default 60. */
  timeoutSec: number;
  /** `user` (a name or uid); unset: the image's user. */
  user?: string;
}

/**
 * A separate verifier's sandbox (`[verifier] environment_mode = "separate"`), made after the
 * agent's is removed; the agent's artifacts are copied into it at their paths.
 */
export interface HarborVerifierEnvironment {
  /** `[verifier.environment] docker_image`, else tests/Dockerfile (context tests/), else the agent's image. */
  image: { ref: string } | { build: { context: string; dockerfile: string } };
  /** The image carries the tests (a verifier docker_image, or one built from tests/): nothing is uploaded. */
  testsBundled: boolean;
  buildTimeoutSec: number;
  resources: { cpus?: number; memoryMb?: number; storageMb?: number; gpus?: number; gpuTypes?: string[] };
  /** `[verifier.environment.env]` (or the agent's `[environment.env]` when there is no `[verifier.environment]`), as written. */
  env: Record<string, string>;
  workdir?: string;
  healthcheck?: HarborHealthcheck;
}

/**
 * One `[[steps]]` entry of a multi-step task, with its `steps/<name>/` directory, settings resolved
 * as harbor resolves them against the task's (the step's own, else the task's).
 */
export interface HarborStep {
  name: string;
  /** Absolute path of steps/<name>/. */
  dir: string;
  /** steps/<name>/instruction.md (required, as in harbor). */
  instructionPath: string;
  /** What is uploaded to /tests before this step's verifier, in order: the task's tests/ (when present), then steps/<name>/tests/ over it. */
  testsDirs: string[];
  /** steps/<name>/solution/ when it holds solve.sh, else the task's solution/ (harbor's oracle falls back to it); absent: neither. */
  solutionDir?: string;
  /** steps/<name>/workdir/: uploaded into the workdir before the step's agent. */
  workdirDir?: string;
  /** steps/<name>/workdir/setup.sh exists: run (bash, as the step's agent user, in the workdir) after the upload. */
  hasSetup: boolean;
  /** `[steps.agent] timeout_sec`, else `[agent] timeout_sec`; undefined is no timeout. */
  agentTimeoutSec?: number;
  /** `[steps.verifier] timeout_sec`, else 600: harbor's step verifier table defaults it, so `[verifier] timeout_sec` is not inherited. */
  verifierTimeoutSec: number;
  /** `[steps.agent] user` / `[steps.verifier] user`, else the task's. */
  users: { agent?: string; verifier?: string };
  /** `[steps.agent]` / `[steps.verifier]` network_mode, else the task's phase networks. */
  network: { agent: HarborNetwork; verifier: HarborNetwork };
  /** `[steps.verifier.env]` as written: over `[verifier.env]` for this step's test.sh. */
  verifierEnv: Record<string, string>;
  /** `[steps.healthcheck]`: after setup.sh, before the agent; a failure ends the step and the remaining ones. */
  healthcheck?: HarborHealthcheck;
  /** `min_reward`: a number gates on "reward", a table on each key (missing counts as -inf); below it, no later step runs. */
  minReward?: number | Record<string, number>;
  /** `[[steps.artifacts]]`: copied after the task's own artifacts, into steps/<name>/artifacts/. */
  artifacts: HarborArtifact[];
  /** `[[steps.verifier.collect]]`: run after the task's `[[verifier.collect]]`. */
  verifierCollect: HarborCollectCommand[];
}

/**
 * One task in the harbor layout, as read from its directory (see the harbor section of the
 * package README for every task.toml field and what berth does with it):
 *
 *   <id>/task.toml                 the task's settings
 *   <id>/environment/Dockerfile    the image, built when [environment] docker_image is absent
 *   <id>/tests/test.sh             the verifier (required); writes /logs/verifier/reward.json or reward.txt
 *   <id>/solution/solve.sh         the oracle (optional): what a perfect agent would do
 *
 * Plain data (paths, numbers, the env tables as written), so a task list can be logged, compared
 * and fingerprinted: `${VAR}` templates stay unresolved here, and are resolved from the host only
 * when a trial runs, so no host value is ever part of the task.
 */
export interface HarborTask {
  /** The task directory's name: stable across runs, used in job paths and the journal. */
  id: string;
  /** Absolute path of the task directory. */
  dir: string;
  /** Absolute path of task.toml. */
  configPath: string;
  /**
   * sha256 over every file of the task directory (names, executable bits, contents): a resumed job
   * reruns a task whose content changed rather than reuse its old result. Set by loadHarborTask;
   * a task built by hand without it is identified by its id alone.
   */
  contentHash?: string;
  /** `[task] name` when given (org/name). */
  name?: string;
  /** environment/docker-compose.yaml's services other than main (compose.ts): spec.services of the agent's sandbox. */
  services?: Record<string, ServiceInput>;
  /** main's depends_on in the compose file: spec.dependsOn. */
  dependsOn?: Record<string, ServiceCondition>;
  /** main's named volumes in the compose file (shared with services): spec.mounts' `{ type: 'volume' }`. */
  volumes?: VolumeMount[];
  /** `[environment] docker_image`, else environment/Dockerfile built with environment/ as the context. */
  image: { ref: string } | { build: { context: string; dockerfile: string } };
  /** `[environment] build_timeout_sec`, default 600. */
  buildTimeoutSec: number;
  resources: {
    cpus?: number;
    memoryMb?: number;
    storageMb?: number;
    gpus?: number;
    /** `gpu_types` when gpus > 0: any of them (an empty list is any GPU, as in harbor). */
    gpuTypes?: string[];
  };
  /**
   * The network of each phase: `environment` from start until the agent runs (and between phases),
   * `agent` while the agent (or the oracle) runs, `verifier` while tests/test.sh runs. Harbor's
   * default is public; `allow_internet = false` and `network_mode = "no-network"` make it 'none'.
   */
  network: { environment: HarborNetwork; agent: HarborNetwork; verifier: HarborNetwork };
  /** `[environment.env]`, `[verifier.env]`, `[solution.env]` as written (values may be `${VAR}` / `${VAR:-default}`). */
  env: { environment: Record<string, string>; verifier: Record<string, string>; solution: Record<string, string> };
  /** `[agent] user` and `[verifier] user` (a name or uid); unset runs as the image's user. */
  users: { agent?: string; verifier?: string };
  /** `[environment] workdir`: the cwd of the agent, the oracle and the verifier. Unset: the image's WORKDIR. */
  workdir?: string;
  /** `[agent] timeout_sec`; undefined (harbor's default) is no timeout. */
  agentTimeoutSec?: number;
  /** `[verifier] timeout_sec`, default 600. */
  verifierTimeoutSec: number;
  healthcheck?: HarborHealthcheck;
  /** Set when the verifier runs in a sandbox of its own (`network.verifier` is then that sandbox's). */
  verifierEnvironment?: HarborVerifierEnvironment;
  /** Top-level `artifacts`: downloaded after the verifier into the attempt's artifacts/ directory. */
  artifacts: HarborArtifact[];
  /** `[[verifier.collect]]`, in order; absent when the task has none. */
  verifierCollect?: HarborCollectCommand[];
  /** What the task offers an agent (`mcp_servers`, `skills_dir`): given to agent functions as is; the oracle uses neither. */
  agentConfig: { mcpServers: ReadonlyArray<Record<string, unknown>>; skillsDir?: string };
  /** environment/ of a task with a docker_image and no Dockerfile: harbor copies it into the workdir at start. */
  environmentDir?: string;
  /** Settings accepted without changing what runs (unknown fields, metadata-like ones): recorded in result.json. */
  notes: string[];
  /**
   * Mistakes in the task's own files that loading found (no tests/test.sh, a script with CRLF line
   * endings): a trial of an agent they concern ends in a TaskDefinitionError before any sandbox
   * starts, and preflight lists them. The task still loads, so the rest of a dataset runs.
   */
  problems?: HarborTaskProblem[];
  /** Absolute path of tests/ (uploaded to /tests). */
  testsDir: string;
  /** Absolute path of solution/ when solution/solve.sh exists (uploaded to /solution for the oracle). */
  solutionDir?: string;
  /** Absolute path of instruction.md when present: what an agent is asked to do. */
  instructionPath?: string;
  /**
   * `[[steps]]`: a multi-step task (harbor's MultiStepTrial): each step runs its agent and its
   * verifier in turn in one sandbox. Absent for a single-step task.
   */
  steps?: HarborStep[];
  /** `multi_step_reward_strategy` (harbor's default "mean"): the attempt's reward from the steps' ones. */
  multiStepRewardStrategy?: 'mean' | 'final';
}

/** One mistake in a task's files: which file (task-relative), what is wrong and how to fix it. */
export interface HarborTaskProblem {
  path: string;
  message: string;
  /** Only the oracle runs this file (solution/solve.sh): other agents are not concerned. */
  oracleOnly?: true;
}

/**
 * What a trial returns: the reward, and every numeric field of reward.json when the verifier
 * wrote one; `exceptionInfo` when the agent timed out or (a command agent) exited non-zero and
 * the verifier scored the sandbox anyway, as harbor scores it. JSON-serialisable, so it goes into
 * the run journal as is.
 */
export type HarborOutcome = {
  reward: number;
  rewards?: Record<string, number>;
  exceptionInfo?: HarborExceptionInfo;
  /** A multi-step task's steps, in order: each one's reward, what went wrong in it, or that it was skipped (an earlier one stopped the run). */
  steps?: HarborStepSummary[];
};

/** One step in a multi-step outcome (the journal and report.json carry it; result.json has the whole record). */
export type HarborStepSummary = { name: string; reward?: number; exceptionType?: string; skipped?: true };

/** Harbor's defaults (harbor 0.26): no agent timeout, 600 s for the verifier and for the build. */
export const DEFAULT_VERIFIER_TIMEOUT_SEC = 600;
export const DEFAULT_BUILD_TIMEOUT_SEC = 600;

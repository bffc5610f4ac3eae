/**
 * One task in the harbor layout, as read from its directory:
 *
 *   <id>/task.toml          [environment] docker_image, cpus, memory_mb | memory, storage_mb, gpus,
 *                           allow_internet; [agent] timeout_sec; [verifier] timeout_sec
 *   <id>/tests/test.sh      the verifier (required); writes /logs/verifier/reward.txt or reward.json
 *   <id>/solution/solve.sh  the oracle (optional): what a perfect agent would do
 *
 * Plain data (paths and numbers), so a task list can be logged, compared and fingerprinted.
 */
export interface HarborTask {
  /** The task directory's name: stable across runs, used in job paths and the journal. */
  id: string;
  /** Absolute path of the task directory. */
  dir: string;
  /** Absolute path of task.toml. */
  configPath: string;
  /** `[environment] docker_image`: berth runs prebuilt images; it does not build environment/Dockerfile. */
  image: string;
  resources: {
    cpus?: number;
    memoryMb?: number;
    storageMb?: number;
    gpus?: number;
  };
  /** `[environment] allow_internet`; false (the default here) runs the sandbox with network 'none'. */
  allowInternet: boolean;
  /** `[agent] timeout_sec`, default 600. */
  agentTimeoutSec: number;
  /** `[verifier] timeout_sec`, default 600. */
  verifierTimeoutSec: number;
  /** Absolute path of tests/ (uploaded to /tests). */
  testsDir: string;
  /** Absolute path of solution/ when solution/solve.sh exists (uploaded to /solution for the oracle). */
  solutionDir?: string;
  /** Absolute path of instruction.md when present: what an agent is asked to do. */
  instructionPath?: string;
}

/**
 * What a trial returns: the reward, and every numeric field of reward.json when the verifier
 * wrote one. JSON-serialisable, so it goes into the run journal as is.
 */
export type HarborOutcome = { reward: number; rewards?: Record<string, number> };

export const DEFAULT_AGENT_TIMEOUT_SEC = 600;
export const DEFAULT_VERIFIER_TIMEOUT_SEC = 600;

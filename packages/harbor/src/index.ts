export type {
  HarborArtifact,
  HarborCollectCommand,
  HarborHealthcheck,
  HarborNetwork,
  HarborOutcome,
  HarborStep,
  HarborStepSummary,
  HarborTask,
} from './task.js';
export type { StepExceptionInfo, StepResultRecord, StepVerifierResult } from './multi-step-reward.js';
export { DEFAULT_BUILD_TIMEOUT_SEC, DEFAULT_VERIFIER_TIMEOUT_SEC } from './task.js';
export { loadHarborTask, loadHarborTasks, type LoadOptions } from './load-task.js';
export type { HostEnv } from './env-template.js';
export type { ArtifactRecord } from './artifacts.js';
export type { CollectRecord } from './verifier-collect.js';
export { parseSizeToMb } from './size.js';
export { LABEL_TASK, taskLabelValue } from './labels.js';
export { readCompose, IGNORED as COMPOSE_IGNORED_KEYS, type ComposeEnvironment, type ComposeVariables } from './compose.js';
export { buildSpec, resolvedEnvironment, type BuiltSpec, type ResolvedEnvironment, type SpecOverrides } from './spec.js';
export { readReward, type HarborFailureKind } from './reward.js';
export type { HarborAgentExceptionType, HarborExceptionInfo } from './exception-info.js';
export type { StepTiming } from './steps.js';
export { attemptDir, type AttemptFailureJson, type AttemptResultFile } from './result-file.js';
export type { AgentFunction, HarborAgent } from './agent.js';
export type { CommandAgent } from './command-agent.js';
export { checkTask } from './task-preflight.js';
export { createHarborTrial, type HarborHooks, type HarborTrialOptions } from './trial.js';
export { setJobAside } from './job-dir.js';
export { runHarborJob, type HarborJobOptions, type HarborJobReport, type HarborTaskStatus, type HarborTaskSummary } from './job.js';
export { startTaskSandbox, type TaskSandboxOptions } from './dev-sandbox.js';
export { TaskSnapshots, type SnapshotSetup, type SnapshotUse } from './snapshot-setup.js';
export { harborPluginCapabilities, type HarborPluginCapabilities } from './plugin-capabilities.js';

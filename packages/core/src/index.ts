/**
 * @berth/core: what a runner author needs. The contract (Backend, Environment), the spec, the
 * error taxonomy and its classification, image references, and the retry controller.
 * Backend authors: see '@berth/core/backend-kit'.
 */
export {
  SPECIFICATION_VERSION,
  type Backend,
  type BuildProgress,
  type Capabilities,
  type DownloadDirOptions,
  type Environment,
  type EnvironmentEvents,
  type NetworkNotice,
  type EnvironmentPhase,
  type EnvironmentPool,
  type ClaimedEnvironment,
  type CapabilityHints,
  type StartupEvent,
  type ExecOptions,
  type ExecResult,
  type ExecStdin,
  type ImageAuthKind,
  type NetworkMode,
  type AllowlistEnforcement,
  type PoolEvents,
  type PoolOptions,
  type PoolStats,
  type PreflightCheck,
  type PreflightReport,
  type PreflightStatus,
  type PullProgress,
  type Snapshot,
  type SweepOptions,
  type SweepReport,
  type TransferOptions,
  type TeardownResult,
  type TransferStats,
} from './contract.js';
export {
  type AllowEntry,
  type NetworkAllowlist,
  NetworkAllowlistSchema,
  addressAllowed,
  allowEntries,
  describeNetwork,
  isAllowlist,
  nameAllowed,
  parseAllowEntry,
} from './network-allowlist.js';
export {
  DEFAULT_STARTUP_MS,
  EnvironmentSpecSchema,
  NetworkSchema,
  sameNetwork,
  ImageAuthSchema,
  ImageInputSchema,
  MountSchema,
  PulledImageInputSchema,
  ResourcesSchema,
  TimeoutsSchema,
  isBuiltImage,
  parseEnvironmentSpec,
  type BuiltImage,
  type EnvironmentSpec,
  type EnvironmentSpecInput,
  type ImageAuth,
  type ImageInput,
  type ImageSource,
  type Mount,
  type PulledImage,
  type PulledImageInput,
  type Resources,
} from './spec.js';
export {
  SERVICE_NAME,
  ServiceSchema,
  ServicesSchema,
  ServiceHealthcheckSchema,
  VolumeMountSchema,
  type VolumeMount,
  oneShots,
  type Service,
  type ServiceInput,
  type ServiceCondition,
  type ServiceHealthcheck,
} from './services.js';
export {
  BackendAuthError,
  BackendUnavailableError,
  BerthError,
  CancelledError,
  CapabilityError,
  ConfigError,
  FAILURE_CATEGORIES,
  REMEDY_IDS,
  ImageBuildError,
  ImagePullError,
  SandboxLostError,
  StartupTimeoutError,
  ServiceStartError,
  type ServiceStartReason,
  TaskDefinitionError,
  TaskFailure,
  TransferError,
  findBerthCause,
  hintRemedy,
  hintText,
  remedied,
  serializeError,
  type BerthErrorOptions,
  type FailureCategory,
  type Hint,
  type ImageBuildReason,
  type ImagePullReason,
  type Operation,
  type Remedied,
  type Remedy,
  type RemedyId,
  type SerializedError,
  type TransferReason,
} from './errors.js';
export {
  DEFAULT_BUILD_TIMEOUT_MS,
  ImageBuildSchema,
  describeImage,
  type ImageBuild,
  type ImageBuildInput,
  type ImageBuilder,
  type ImageBuildRequest,
} from './build-spec.js';
export { classifyFailure, type ClassifiedFailure } from './classify.js';
export { redactSecrets, registerSecret } from './redact.js';
/** Abort signals linked for one operation and unlinked when it ends (runners and backends alike). */
export { linkSignals, type SignalLink } from './abort.js';
export { LABEL_CREATED, LABEL_ENVIRONMENT, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_SESSION, LABEL_SNAPSHOT_OF, SESSION_ID } from './labels.js';
export {
  applyMirrors,
  formatImageRef,
  mirrorImage,
  parseImageRef,
  parseMirrorRules,
  type ImageRef,
  type MirroredImage,
  type MirrorRule,
} from './image-ref.js';
export { runTrials } from './trials/run-trials.js';
/** When a sandbox's start reached each mark (Environment.startTimings), and its phases. */
export { START_MARKS, startPhases, type StartMark, type StartPhase, type StartTimings } from './start-timings.js';
/** Typed event channels: `createEvents<RunEvents>()` for runTrials' `events`; Environment.events is one too. */
export { createEvents, type EventMap, type TypedEvents } from './events.js';
export { VirtualClock, systemClock } from './time/clock.js';
export { DEFAULT_VALIDITY, buildRunReport } from './trials/report.js';
export { percentile, phaseStats, startPhaseStats } from './trials/start-stats.js';
export { RunMismatchError, type RunIdentity } from './trials/run-identity.js';
export { setAside } from './set-aside.js';
export { SandboxTracker } from './trials/sandbox-tracker.js';
export type {
  AttemptFailure,
  AttemptRecord,
  AttemptSandboxLeft,
  AttemptSandboxes,
  AttemptStart,
  BackoffOptions,
  OutagePauseOptions,
  PhaseStats,
  Clock,
  JsonValue,
  RunEvents,
  RunProgress,
  RunReport,
  RunResult,
  RunTrialsOptions,
  SandboxAccounting,
  SandboxNotRemoved,
  StartPhaseStats,
  TaskRecord,
  TaskStatus,
  TrialContext,
  TrialFunction,
  TrialSandboxes,
  ValidityThresholds,
} from './trials/types.js';
export { pooled, type PooledBackend } from './pool/pooled-backend.js';
export { DEFAULT_MAX_IDLE_MS, MAX_POOL_SIZE } from './kit/pool-options.js';
export type { AttachOptions, ProcessInfo, SpawnedExit, SpawnedProcess, SpawnOptions } from './processes.js';
export type { PortForward } from './ports.js';

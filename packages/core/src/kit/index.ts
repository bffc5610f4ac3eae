/**
 * @berth/core/backend-kit: what a backend author needs, and no more. A backend is
 * `defineBackend({ ... })`: its engine's calls (a `SandboxTransport` per sandbox, an API check,
 * what a spec needs checked, what it manages); the kit does the rest. See the "Writing a backend"
 * section of @berth/core's README.
 */
export { SandboxPool, type SandboxPoolOptions } from './sandbox-pool.js';
export { DEFAULT_MAX_IDLE_MS, MAX_POOL_SIZE } from './pool-options.js';
export { defineBackend, type BackendDefinition, type DefinedBackend, type ManagedResource } from './define-backend.js';
export { GUARDIAN_ENV, guardianEnabled, type GuardianTarget } from './guardian.js';
export {
  DEFAULT_LIFETIME_MS,
  DEFAULT_REFRESH_NAMES_MS,
  defaultLifetimeMs,
  refreshNamesMs,
  type AllowlistNamesOption,
  checkFactoryOptions,
  COMMON_OPTION_NAMES,
  type CommonBackendOptions,
  type DefaultLifetimeOption,
  type ProbeRegistriesOption,
  type PullPolicyOption,
} from './common-options.js';
export { imageCheck, type ImageCheckContext } from './image-check.js';
export { checkOptionNames, optionNames } from './option-names.js';
export { capabilityTable, type CapabilitySource } from './capability-table.js';
export type {
  ArchiveTransport,
  CreateContext,
  CreateOutcome,
  ProcessExit,
  ProcessRequest,
  SandboxProcess,
  SandboxStatus,
  SandboxTransport,
  SnapshotContext,
  SnapshotImage,
  StartProgress,
} from './transport.js';
export type { TransferMode } from './transfers.js';
export { CreationLimiter, THROTTLE_BACKOFF, throttledStatus, type CreationLimits } from './creation-limiter.js';
export { assertSupported, refuseExecUser, type CapabilityHints } from './capabilities.js';
export { USER_SWITCH_TOOLS } from './user-launcher.js';
export { pullFailure, notPresentNeverPull, type PullFailureContext } from './pull-failure.js';
export {
  checkPullAuth,
  resolvePullCredential,
  type AwsAuth,
  type PullAuthContext,
  type PullCredential,
  type PullCredentialSources,
  type RegistrySecret,
} from './registry-auth.js';
export { resolvePull, type BackendIdentity, type PullPolicy, type PullSources, type ResolvePullContext, type ResolvedPull } from './resolve-pull.js';
export { BUILD_REPOSITORY, baseImages, buildTag, hashBuildContext, packBuildContext, readDockerfile } from './build-context.js';
export { buildFailure, buildTimedOut, logTail, type BuildFailureContext } from './build-failure.js';
export { probeImage, type ProbeResult } from './registry-probe.js';
export { keepAliveCommand } from './keep-alive.js';
export { snapshotIdOf, snapshotRef } from './snapshot-ref.js';
export { IMAGE_MOUNT_NO_DIRECTORY, IMAGE_MOUNT_STAGING, imageMountCopyCommand } from './image-mount-copy.js';
export { isUnreachable, refusedBeforeSending, unreachableApi } from './network-errors.js';
export { resolveAllowlist, systemResolver, type AllowedHost, type HostResolver, type ResolvedAllowlist } from './allowlist-blocks.js';
export { HOSTS_MARK, SERVICES_HOSTS_MARK, hostsFileCommand } from './allowlist-hosts.js';
export { startServices, lastLines, type ServiceEngine, type ServiceGroupContext, type ServiceState } from './service-group.js';
export { AllowlistRefresh } from './allowlist-refresh.js';
export { SandboxAllowlist, type AllowBlocks, type AllowlistEngine } from './sandbox-allowlist.js';
export { type EgressAdmission, EgressProxy, type EgressProxyListenOptions, type EgressProxyPorts, resolvConfAt } from './egress-proxy.js';
export { API_RETRY_DEFAULTS, retryIdempotent, type ApiRetryPolicy, type TransientAnswer } from './api-retry.js';
export { retryDelayMs } from '../time/backoff.js';
export { preflightFailure } from './backend-helpers.js';
export { cancelledFrom, raceAbort, throwIfAborted } from '../abort.js';
export { registerSecret } from '../redact.js';
export { parseEnvironmentSpec } from '../spec.js';
export { mirrorImage, type MirroredImage } from '../image-ref.js';
export {
  LABEL_CREATED,
  LABEL_ENVIRONMENT,
  LABEL_MANAGED,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_SESSION,
  LABEL_SNAPSHOT_OF,
  SESSION_ID,
  sandboxLabels,
} from '../labels.js';

import { redactSecrets } from '../redact.js';
import { BerthError, hasMarker, type BerthErrorOptions, type FailureCategory } from './berth-error.js';

// Getting a sandbox up: its image (pulled or built) and its startup deadline.

export type ImagePullReason = 'unauthorized' | 'not_found' | 'rate_limited' | 'transient';

const imagePull = Symbol.for('berth.error.ImagePullError');
/** The image could not be pulled. unauthorized and not_found are permanent; the rest transient. */
export class ImagePullError extends BerthError {
  private readonly [imagePull] = true;
  readonly type = 'ImagePullError';
  readonly reason: ImagePullReason;
  /** The image reference as the caller wrote it (never contains credentials). */
  readonly image: string;
  constructor(options: BerthErrorOptions & { reason: ImagePullReason; image: string }) {
    super({ operation: 'pull', ...options });
    this.reason = options.reason;
    this.image = options.image;
  }
  get category(): FailureCategory {
    return this.reason === 'unauthorized' || this.reason === 'not_found' ? 'permanent_infra' : 'transient_infra';
  }
  get retryable(): boolean {
    return this.category === 'transient_infra';
  }
  static override isInstance(e: unknown): e is ImagePullError {
    return hasMarker(e, imagePull);
  }
  protected override details() {
    return { reason: this.reason, image: this.image };
  }
}

/**
 * Why an image build failed: a Dockerfile step that failed (`step_failed`) or a Dockerfile the
 * builder cannot read (`invalid`) fail the same way every time; a build cut off by its timeout or
 * by the network (`timeout`, `network`) may pass on another attempt.
 */
export type ImageBuildReason = 'step_failed' | 'invalid' | 'timeout' | 'network';

const imageBuild = Symbol.for('berth.error.ImageBuildError');
/** The image could not be built from its Dockerfile. A base image that cannot be pulled is an ImagePullError instead. */
export class ImageBuildError extends BerthError {
  private readonly [imageBuild] = true;
  readonly type = 'ImageBuildError';
  readonly reason: ImageBuildReason;
  /** The build context (a local directory). */
  readonly context: string;
  /** The Dockerfile step that failed, as the builder names it, e.g. 'Step 2/3 : RUN make'. */
  readonly step?: string;
  /** The last lines of the build's log (secrets redacted when serialised). */
  readonly logTail: string;
  constructor(options: BerthErrorOptions & { reason: ImageBuildReason; context: string; step?: string; logTail?: string }) {
    super({ operation: 'build', ...options });
    this.reason = options.reason;
    this.context = options.context;
    if (options.step !== undefined) this.step = options.step;
    this.logTail = options.logTail ?? '';
  }
  get category(): FailureCategory {
    return this.reason === 'step_failed' || this.reason === 'invalid' ? 'permanent_infra' : 'transient_infra';
  }
  get retryable(): boolean {
    return this.category === 'transient_infra';
  }
  static override isInstance(e: unknown): e is ImageBuildError {
    return hasMarker(e, imageBuild);
  }
  protected override details() {
    return { reason: this.reason, context: this.context, step: this.step ?? null, logTail: redactSecrets(this.logTail) };
  }
}

const startupTimeout = Symbol.for('berth.error.StartupTimeoutError');
/** The sandbox did not become ready within timeouts.startupMs. */
export class StartupTimeoutError extends BerthError {
  private readonly [startupTimeout] = true;
  readonly category = 'transient_infra' as const;
  readonly retryable = true;
  readonly type = 'StartupTimeoutError';
  readonly timeoutMs: number;
  /** The last status observed before giving up, e.g. 'Pending: Unschedulable: DiskPressure'. */
  readonly lastStatus?: string;
  constructor(options: BerthErrorOptions & { timeoutMs: number; lastStatus?: string }) {
    super({ operation: 'start', ...options });
    this.timeoutMs = options.timeoutMs;
    if (options.lastStatus !== undefined) this.lastStatus = options.lastStatus;
  }
  static override isInstance(e: unknown): e is StartupTimeoutError {
    return hasMarker(e, startupTimeout);
  }
  protected override details() {
    return { timeoutMs: this.timeoutMs, lastStatus: this.lastStatus ?? null };
  }
}

/**
 * Why a service (spec.services) did not come up: it never passed its healthcheck ('unhealthy'),
 * its process ended before it was up, or a one-shot ended other than 0 ('exited'), or it was
 * killed for memory ('oom'). A process that exits by itself before it is up does so every time:
 * permanent. A healthcheck that never passed (like the sandbox's own, a StartupTimeoutError) and
 * memory may go another way on a less loaded machine: transient.
 */
export type ServiceStartReason = 'unhealthy' | 'exited' | 'oom';

const serviceStart = Symbol.for('berth.error.ServiceStartError');
/** A service of the sandbox did not come up; names it, with its last log lines. Pull and build failures of its image are ImagePullError / ImageBuildError. */
export class ServiceStartError extends BerthError {
  private readonly [serviceStart] = true;
  readonly type = 'ServiceStartError';
  readonly service: string;
  readonly reason: ServiceStartReason;
  /** Whether the last probe of an unhealthy service timed out (rather than failed). */
  readonly timedOut: boolean;
  /** The service's last log lines (secrets redacted when serialised). */
  readonly logTail: string;
  constructor(options: BerthErrorOptions & { service: string; reason: ServiceStartReason; timedOut?: boolean; logTail?: string }) {
    super({ operation: 'start', ...options });
    this.service = options.service;
    this.reason = options.reason;
    this.timedOut = options.timedOut ?? false;
    this.logTail = options.logTail ?? '';
  }
  get category(): FailureCategory {
    return this.reason === 'exited' ? 'permanent_infra' : 'transient_infra';
  }
  get retryable(): boolean {
    return this.category === 'transient_infra';
  }
  static override isInstance(e: unknown): e is ServiceStartError {
    return hasMarker(e, serviceStart);
  }
  protected override details() {
    return { service: this.service, reason: this.reason, timedOut: this.timedOut, logTail: redactSecrets(this.logTail) };
  }
}

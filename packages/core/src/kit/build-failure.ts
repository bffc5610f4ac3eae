import type { ImageBuild } from '../build-spec.js';
import { ImageBuildError, type BerthError, type Hint } from '../errors.js';
import { pullFailure } from './pull-failure.js';

/**
 * What a failed build said about itself. The network wording is that of resolvers, curl, apt, pip
 * and Go's net package: a RUN step that failed on it may pass on another attempt, and a runner
 * should retry it rather than score the task zero.
 */
const NETWORK_WORDS =
  /temporary failure (in name resolution|resolving)|could not resolve host|name or service not known|network is unreachable|connection (timed out|reset|refused)|i\/o timeout|tls handshake timeout|no route to host|failed to establish a new connection|EAI_AGAIN|ETIMEDOUT|ECONNRESET/i;
/** The builder could not read the Dockerfile itself: fixing the file is the only way on. */
const INVALID_WORDS = /dockerfile parse error|unknown instruction|cannot locate specified dockerfile|failed to parse|syntax error/i;

export interface BuildFailureContext {
  backend: string;
  environmentId?: string;
  build: ImageBuild;
  /** The step that was running when the build failed, as the builder named it (e.g. 'Step 1/3 : FROM alpine'). */
  step?: string;
  /** The last lines of the build log. */
  logTail: string;
  /** The base image, when the failing step was pulling it (a FROM step). */
  baseImage?: string;
  /** How a user of this backend passes credentials for base images. */
  credentialsHint?: Hint;
  cause?: unknown;
}

/**
 * The error for a build that failed with `message`: an ImagePullError when the base image could
 * not be pulled (with the usual reasons), else an ImageBuildError naming the step and carrying the
 * log's tail.
 */
export function buildFailure(message: string, ctx: BuildFailureContext): BerthError {
  const base = { backend: ctx.backend, ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}), cause: ctx.cause };
  if (ctx.baseImage) {
    return pullFailure(message, {
      ...base,
      operation: 'build',
      image: ctx.baseImage,
      hadCredentials: false,
      credentialsHint: ctx.credentialsHint ?? 'log in to its registry where the build runs',
    });
  }
  const reason = INVALID_WORDS.test(message) ? 'invalid' : NETWORK_WORDS.test(`${message}\n${ctx.logTail}`) ? 'network' : 'step_failed';
  const where = ctx.step ? ` at ${ctx.step}` : '';
  const tail = ctx.logTail.trim() ? `\n--- last lines of the build log ---\n${ctx.logTail.trim()}` : '';
  const why = reason === 'network' ? ' (a network failure: another attempt may pass)' : '';
  return new ImageBuildError({
    ...base,
    reason,
    context: ctx.build.context,
    ...(ctx.step ? { step: ctx.step } : {}),
    logTail: ctx.logTail,
    message: `building the image from ${ctx.build.context} failed${where}: ${message.trim()}${why}${tail}`,
  });
}

/** The build ran out of its time. */
export function buildTimedOut(ctx: Omit<BuildFailureContext, 'baseImage'> & { timeoutMs: number }): ImageBuildError {
  return new ImageBuildError({
    backend: ctx.backend,
    ...(ctx.environmentId ? { environmentId: ctx.environmentId } : {}),
    reason: 'timeout',
    context: ctx.build.context,
    ...(ctx.step ? { step: ctx.step } : {}),
    logTail: ctx.logTail,
    message: `building the image from ${ctx.build.context} did not finish within ${ctx.timeoutMs} ms${ctx.step ? ` (at ${ctx.step})` : ''}: raise image.build.timeoutMs if the build is slow`,
  });
}

/** The last `lines` lines of a log, each cut to a sane width. */
export function logTail(lines: readonly string[], count = 20): string {
  return lines
    .slice(-count)
    .map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l))
    .join('\n');
}

// Who berth says it is to Modal: x-modal-client-type and x-modal-client-version on every
// control-plane call, and a user-agent naming berth on every call. Modal's server decides by the
// client version whether to serve a client, warn it (x-modal-warning) or refuse it
// (FAILED_PRECONDITION), so the version berth sends is the one whose protocol it speaks: that of
// the Python SDK its fields.json is checked against (test/sdk-descriptors.unit.test.ts). The README's
// "Client identity" section gives the reasons for the defaults.
import { ConfigError, remedied, type BerthErrorOptions } from '@berth/core';
import { BACKEND, IDENTITY } from './identity.js';
import type { ModalBackendOptions } from './options.js';
import { CLIENT_TYPE_NAMES, clientTypeNumber } from './wire/index.js';

/** The version of Modal's Python SDK whose protocol berth follows (test/sdk-descriptors.unit.test.ts checks fields.json against its descriptors). */
export const MODAL_SDK_VERSION = '1.6.4';
/** CLIENT_TYPE_CLIENT: what Modal's Python SDK sends outside Modal's containers. */
export const DEFAULT_CLIENT_TYPE = 'CLIENT_TYPE_CLIENT';
/** This package's version, for the user-agent (test/client-identity.test.ts keeps it package.json's). */
export const BERTH_MODAL_VERSION = '0.1.0';

export interface ClientIdentity {
  /** x-modal-client-version */
  version: string;
  /** x-modal-client-type, as its number */
  type: number;
  /** user-agent: berth and its version, so Modal's logs can tell berth from the SDK it imitates. */
  userAgent: string;
}

/** A header value: visible ASCII, no spaces (undici refuses control characters; Modal compares versions). */
const VERSION = /^[\x21-\x7e]{1,64}$/;

/** The identity an options object asks for, checked before any I/O (ConfigError naming the option). */
export function clientIdentity(options: Pick<ModalBackendOptions, 'clientVersion' | 'clientType'>): ClientIdentity {
  const refuse = (option: string, message: string) =>
    new ConfigError({ operation: 'config', backend: BACKEND, path: `options.${option}`, message: `${IDENTITY.factory}'s ${option} ${message}` });
  const version: unknown = options.clientVersion ?? MODAL_SDK_VERSION;
  if (typeof version !== 'string' || !VERSION.test(version))
    throw refuse(
      'clientVersion',
      `is a version as Modal's clients send it (e.g. "${MODAL_SDK_VERSION}"): 1 to 64 visible ASCII characters; got ${JSON.stringify(version)}`,
    );
  const typeOption: unknown = options.clientType ?? DEFAULT_CLIENT_TYPE;
  const type = typeof typeOption === 'string' || typeof typeOption === 'number' ? clientTypeNumber(typeOption) : undefined;
  if (type === undefined || !Number.isSafeInteger(type) || type < 0)
    throw refuse('clientType', `is one of Modal's ClientType names (${CLIENT_TYPE_NAMES.join(', ')}) or a number; got ${JSON.stringify(typeOption)}`);
  const userAgent = `berth/${BERTH_MODAL_VERSION} (@berth/backend-modal; node/${process.versions.node}; ${process.platform})`;
  return { version, type, userAgent };
}

/** About the client, not what it asked for. */
const ABOUT_CLIENT = /\bclient\b|\bsdk\b|pip install[^.]*\bmodal\b|`modal`/i;
/** Refused for its age. */
const TOO_OLD = /too old|outdated|no longer supported|not supported|unsupported|deprecated|upgrade|update/i;
/** Image builder versions are the image's business (berth pins one), not the client's. */
const NOT_CLIENT = /image builder|builder version/i;

/**
 * Whether a FAILED_PRECONDITION's message says the client is too old or no longer supported.
 * Modal's SDKs before 0.68 read "The client version (X) is too old. Please update (pip install
 * --upgrade modal)." from the server; deprecation notices read "Version X of `modal` will be
 * deprecated ... Please upgrade".
 */
export function isClientVersionRefusal(details: string): boolean {
  return ABOUT_CLIENT.test(details) && TOO_OLD.test(details) && !NOT_CLIENT.test(details);
}

/** Modal refused the client version berth sent: what to upgrade, or what to set. */
export function clientVersionRefused(details: string, base: Omit<BerthErrorOptions, 'message'>): ConfigError {
  return new ConfigError({
    ...base,
    path: 'options.clientVersion',
    ...remedied(
      'modal-client-version',
      'set options.clientVersion (and options.clientType) to it',
      (fix) =>
        `Modal refused berth's client version: ${details}. berth sends x-modal-client-version from options.clientVersion ` +
        `(default ${MODAL_SDK_VERSION}, the version of Modal's Python SDK whose protocol @berth/backend-modal ${BERTH_MODAL_VERSION} speaks): ` +
        'upgrade @berth/backend-modal to a release that follows a version Modal accepts; or, if Modal names a version it accepts ' +
        `and berth's protocol still works with it, ${fix}`,
    ),
  });
}

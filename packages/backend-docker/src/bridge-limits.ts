import { BackendUnavailableError, BerthError, ConfigError } from '@berth/core';
import { dockerMessage, statusOf, type ErrorContext } from './docker-errors.js';

/**
 * A Linux bridge takes at most 1,023 ports (the kernel's BR_MAX_PORTS, 1,024, less port 0): a
 * sandbox with network 'public' is one of them (its veth), so one bridge holds about a thousand.
 */
export const BRIDGE_PORTS = 1023;

/** The bridge a 'public' sandbox joins: options.publicNetwork, else the engine's default bridge. */
export function publicNetworkName(publicNetwork: string | undefined): string {
  return publicNetwork ?? 'bridge';
}

const MORE_AT_ONCE =
  "Retrying helps once some of its sandboxes end. For more at once, give further backend instances a bridge of their own (options.publicNetwork: a network made with `docker network create`), or use network 'none' where a task needs none";

/**
 * A 'public' sandbox the engine could not put on its bridge because the bridge is full: no port
 * left (Linux's limit, "exchange full") or no address left in its subnet. Both lift when sandboxes
 * on that bridge end, so the error is a BackendUnavailableError (retryable), naming the limit and
 * what to change for more at once. A publicNetwork that does not exist is a ConfigError.
 */
export function bridgeRefusal(error: unknown, ctx: ErrorContext, network: string): BerthError | undefined {
  if (BerthError.isInstance(error)) return undefined;
  const message = dockerMessage(error);
  if (/exchange full/i.test(message)) {
    return new BackendUnavailableError({
      ...ctx,
      message: `network 'public' is full: bridge network "${network}" has no port left for the sandbox (a Linux bridge takes at most ${BRIDGE_PORTS} interfaces, one per sandbox on it). ${MORE_AT_ONCE}`,
      cause: error,
    });
  }
  if (/no available (ipv[46] )?addresses/i.test(message)) {
    return new BackendUnavailableError({
      ...ctx,
      message: `network 'public' is full: bridge network "${network}" has no free address left in its subnet (one per sandbox on it). ${MORE_AT_ONCE}, or a network with a larger subnet (docker network create --subnet)`,
      cause: error,
    });
  }
  if (network !== 'bridge' && statusOf(error) === 404 && /network .* not found/i.test(message)) {
    return new ConfigError({
      ...ctx,
      path: 'options.publicNetwork',
      message: `options.publicNetwork names network "${network}", which the Docker engine does not have: create it (docker network create ${network}) or leave the option out for the engine's default bridge`,
      cause: error,
    });
  }
  return undefined;
}

import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { BackendUnavailableError, ConfigError } from '../errors.js';
import { allowEntries, type NetworkAllowlist } from '../network-allowlist.js';

/** Resolves a hostname to its IPv4 addresses (a backend's options.resolveHost, else the runner's resolver). */
export type HostResolver = (name: string) => Promise<readonly string[]>;

/** getaddrinfo, IPv4 only: what the runner itself would connect to. */
export const systemResolver: HostResolver = async (name) => (await lookup(name, { all: true, family: 4 })).map((a) => a.address);

/** An allowlist's hostname and the IPv4 addresses berth resolved it to. */
export interface AllowedHost {
  name: string;
  addresses: readonly string[];
}

/** What an address-enforcing backend applies: the blocks its filter lets through, and the names the sandbox's hosts file answers. */
export interface ResolvedAllowlist {
  /** CIDRs: the ranges and addresses as given, each name's addresses as /32s. */
  blocks: string[];
  /** The names, for the sandbox's /etc/hosts (see allowlist-hosts.ts): its resolvers are cut off, so these are all it resolves. */
  hosts: AllowedHost[];
}

/**
 * For backends that enforce allowlists by address (Kubernetes' NetworkPolicy, Docker's packet
 * filter): the CIDRs an allowlist allows, its ranges and addresses as given and its hostnames as the
 * addresses they resolve to now, and those names with their addresses. A name with no IPv4 address
 * is a ConfigError naming it; a resolver that failed otherwise is transient. Wildcards have no
 * addresses: such backends refuse them before any I/O (AllowlistEnforcement.wildcards), so one
 * here is a bug.
 */
export async function resolveAllowlist(
  allowlist: NetworkAllowlist,
  resolve: HostResolver,
  ctx: { backend: string; environmentId: string; engine: string },
): Promise<ResolvedAllowlist> {
  const at = { operation: 'network' as const, backend: ctx.backend, environmentId: ctx.environmentId };
  const blocks = new Set<string>();
  const hosts: AllowedHost[] = [];
  for (const entry of allowEntries(allowlist)) {
    if (entry.kind === 'range') blocks.add(entry.cidr);
    else if (entry.kind === 'address') blocks.add(`${entry.address}/32`);
    else if (entry.kind === 'wildcard') throw new Error('unreachable: wildcards are refused before any I/O where names are resolved');
    else {
      let addresses: readonly string[];
      try {
        addresses = await resolve(entry.host);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === 'ENOTFOUND' || code === 'ENODATA')
          throw new ConfigError({
            ...at,
            path: 'spec.network.allow',
            message: `the allowlist's host "${entry.host}" has no IPv4 address (${String(code)}): ${ctx.engine} enforces names by the addresses berth resolves for them, so list a name that resolves, or its addresses`,
            cause: error,
          });
        throw new BackendUnavailableError({
          ...at,
          message: `resolving the allowlist's host "${entry.host}" failed: ${(error as Error).message}`,
          cause: error,
        });
      }
      if (addresses.length === 0)
        throw new ConfigError({ ...at, path: 'spec.network.allow', message: `the allowlist's host "${entry.host}" resolved to no IPv4 address` });
      const bad = addresses.find((a) => !isIPv4(a));
      // A resolveHost of the user's own may return anything; only IPv4 addresses are written into a filter.
      if (bad !== undefined)
        throw new ConfigError({
          ...at,
          path: 'options.resolveHost',
          message: `resolving the allowlist's host "${entry.host}" gave "${bad}", which is not an IPv4 address`,
        });
      for (const address of addresses) blocks.add(`${address}/32`);
      hosts.push({ name: entry.host, addresses: [...new Set(addresses)] });
    }
  }
  return { blocks: [...blocks], hosts };
}

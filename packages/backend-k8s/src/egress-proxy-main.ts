// The program of berth's egress proxy pod (egress-proxy-pod.ts), bundled into one script by
// scripts/egress-proxy-program.mjs (egress-proxy-program.generated.ts) and run there with `node -e`.
// Not imported by the backend: it runs inside the cluster, not in the runner.
import { lookup, Resolver } from 'node:dns/promises';
import { readFileSync, statSync } from 'node:fs';
import { allowEntries } from '@berth/core';
import { type EgressAdmission, EgressProxy, type HostResolver } from '@berth/core/backend-kit';
import { ADMISSIONS_DIR, admissionFile, PROXY_PORTS } from './egress-proxy-admission.js';

/** The cluster's resolver (the pod's resolv.conf), or the nameservers berth was given (host or host:port). */
function resolverOf(nameservers: string | undefined): HostResolver {
  const servers = (nameservers ?? '').split(',').filter(Boolean);
  if (servers.length === 0) return async (name) => (await lookup(name, { all: true, family: 4 })).map((a) => a.address);
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  resolver.setServers(servers);
  return (name) => resolver.resolve4(name);
}

/** A sandbox's admission, read from its file at each connection (berth writes it by exec, renamed into place): cached by mtime. */
function admissionsFrom(dir: string, resolve: HostResolver): (source: string) => EgressAdmission | undefined {
  const cache = new Map<string, { mtimeMs: number; admission: EgressAdmission }>();
  return (source) => {
    const file = admissionFile(dir, source);
    let mtimeMs: number;
    try {
      mtimeMs = statSync(file).mtimeMs;
    } catch {
      cache.delete(source);
      return undefined;
    }
    const known = cache.get(source);
    if (known?.mtimeMs === mtimeMs) return known.admission;
    try {
      const allow = JSON.parse(readFileSync(file, 'utf8')) as string[];
      const admission = { entries: allowEntries({ allow }).filter((e) => e.kind === 'host' || e.kind === 'wildcard'), resolve };
      cache.set(source, { mtimeMs, admission });
      return admission;
    } catch {
      return undefined;
    }
  };
}

async function main(): Promise<void> {
  const own = process.env.BERTH_EGRESS_POD_IP;
  if (!own) throw new Error('BERTH_EGRESS_POD_IP is not set (the pod spec gives it from status.podIP)');
  const resolve = resolverOf(process.env.BERTH_EGRESS_NAMESERVERS);
  const proxy = await EgressProxy.listen('0.0.0.0', {
    ports: PROXY_PORTS,
    answerWith: own,
    admissions: admissionsFrom(process.env.BERTH_EGRESS_DIR ?? ADMISSIONS_DIR, resolve),
  });
  process.stdout.write(`berth egress proxy on ${own}: tls ${proxy.ports.tls}, http ${proxy.ports.http}, dns ${proxy.ports.dns}\n`);
  // The servers do not keep the process alive by themselves (EgressProxy unrefs them).
  setInterval(() => undefined, 1 << 30);
  process.on('SIGTERM', () => void proxy.close().then(() => process.exit(0)));
}

main().catch((error: unknown) => {
  process.stderr.write(`berth egress proxy: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});

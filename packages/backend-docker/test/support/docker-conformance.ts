// What the Docker conformance runs share: the images (test/setup/setup.sh makes them) and the
// fault hooks, made with the engine itself.
import Docker from 'dockerode';
import { SESSION_ID } from '@berth/core';
import { buildTag, hashBuildContext, systemResolver } from '@berth/core/backend-kit';
import { createDockerBackend, type DockerBackendOptions } from '@berth/backend-docker';
import { listenForServerNames, listenForTokens, type ConformanceOptions } from '@berth/conformance';
import { bridgeGateway, secondHostAddress } from '@berth/test-support/docker-bridge';

const docker = new Docker();

function statusOf(error: unknown): number | undefined {
  const code = (error as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** The allowlist DNS case's name, which berth resolves (options.resolveHost) to the reachable listener's address. */
const ALLOWED_NAME = 'listener.berth-conformance.test';

/**
 * The options every Docker conformance run's backend takes: names under .test (ALLOWED_NAME, and
 * the fresh names the TLS case's ClientHellos carry, which berth's egress proxy connects to)
 * resolved to the bridge's gateway, where the listeners are. No egressImage: the allowlist cases
 * run with the helper image berth makes on first use.
 */
export const dockerTestOptions = {
  resolveHost: async (name: string) => (name.endsWith('.test') ? [await bridgeGateway()] : systemResolver(name)),
} satisfies DockerBackendOptions;

export const dockerConformance: ConformanceOptions = {
  name: 'docker',
  // Names matched by berth's egress proxy here; the exec-transfers run keeps them resolved to addresses.
  createBackend: () => createDockerBackend({ ...dockerTestOptions, egressProxy: true }),
  allowedName: ALLOWED_NAME,
  images: {
    basic: 'berth-test/busybox:latest',
    private: {
      ref: '127.0.0.1:5000/berth/private-busybox:latest',
      auth: { username: 'berth', password: 'berth-test-secret' },
    },
    missing: '127.0.0.1:5000/berth/does-not-exist:nope',
  },
  specDefaults: { network: 'none' },
  // On the bridge's gateway: host-only, reached by public containers.
  reachableListener: async () => listenForTokens(await bridgeGateway()),
  // Another of this machine's addresses, reached through the gateway: the allowlist cases' denied one.
  secondListener: async () => listenForTokens(await secondHostAddress()),
  // Port 443 on the gateway: berth's egress proxy connects there for the names it lets through.
  serverNameListener: async () => listenForServerNames(await bridgeGateway()),
  faults: {
    // The container is named after the environment id.
    kill: async (env) => {
      const container = docker.getContainer(env.id);
      await container.kill();
      // Until the engine says it stopped (the contract of faults.kill).
      await container.wait({ condition: 'not-running' });
    },
    // A service's container is named <sandbox>-<service> (services.ts).
    killService: async (env, service) => {
      const container = docker.getContainer(`${env.id}-${service}`);
      await container.kill();
      await container.wait({ condition: 'not-running' });
    },
    forgetImage: async (ref) => {
      try {
        await docker.getImage(ref).remove({ force: true });
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
    },
    imagePresent: (ref) =>
      docker
        .getImage(ref)
        .inspect()
        .then(
          () => true,
          (error: unknown) => (statusOf(error) === 404 ? false : Promise.reject(error)),
        ),
    forgetBuild: async (context) => {
      const tag = buildTag(await hashBuildContext({ context, dockerfile: 'Dockerfile', args: {}, network: 'none' }));
      // (The untagged layers of builds that failed part-way go at the end of the run: see test/global-setup.ts.)
      await docker
        .getImage(tag)
        .remove({ force: true })
        .catch(() => undefined);
    },
    // BERTH_SESSION may be shared by every test process of a run (test/global-setup.ts), so the
    // owner pid narrows the list to this process: other test files run in parallel.
    listLeftovers: async () => {
      const containers = await docker.listContainers({
        all: true,
        filters: { label: [`berth.session=${SESSION_ID}`, `berth.owner-pid=${process.pid}`] },
      });
      // And the services' networks (services.ts), labelled the same.
      const networks = await docker.listNetworks({ filters: { label: [`berth.session=${SESSION_ID}`, `berth.owner-pid=${process.pid}`] } });
      // And the sandboxes' own volumes (services.ts).
      const volumes =
        (await docker.listVolumes({ filters: { label: [`berth.session=${SESSION_ID}`, `berth.owner-pid=${process.pid}`, 'berth.volume'] } })).Volumes ?? [];
      return [
        ...containers.map((c) => c.Names[0]?.replace(/^\//, '') ?? c.Id),
        ...networks.map((n) => `network/${n.Name}`),
        ...volumes.map((v) => `volume/${v.Name}`),
      ];
    },
  },
};

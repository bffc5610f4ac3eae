// What the Modal conformance runs share: the simulator's client options, the images and the fault
// hooks (the simulator's containers on the Docker engine).
import Docker from 'dockerode';
import { SESSION_ID } from '@berth/core';
import { listenForServerNames, listenForTokens, type ConformanceOptions } from '@berth/conformance';
import { createModalBackend } from '@berth/backend-modal';
import { bridgeGateway, secondHostAddress } from '@berth/test-support/docker-bridge';
import type { ModalSimulator } from '@berth/test-support/modal-sim';

const docker = new Docker();
/** How long faults.kill waits for the simulator to end a killed sandbox. */
const KILL_SETTLE_MS = 15_000;

/** The containers behind this process's sandboxes (the simulator labels them with berth's tags). */
async function containers(filter: string[]) {
  return docker.listContainers({ all: true, filters: { label: ['berth.modal-sim', ...filter] } });
}

/** The suite's options against `sim`; every backend made is pushed on `backends`, for the caller to close. */
/**
 * Kills the simulator's containers with these tags, then waits until the simulator has ended their
 * sandboxes (the contract of faults.kill): it removes a container when it does, and only then
 * reports the sandbox finished. Bounded well inside a case's 30 s, so that this error, not the
 * case's timeout, says what went wrong; a kill that found nothing would let the case go on as if it had.
 */
async function killTagged(label: string[], what: string): Promise<void> {
  const found = await containers(label);
  if (found.length === 0) throw new Error(`${what}: no such simulator container`);
  for (const c of found)
    await docker
      .getContainer(c.Id)
      .kill()
      .catch(() => undefined);
  const deadline = Date.now() + KILL_SETTLE_MS;
  while ((await containers(label)).length > 0) {
    if (Date.now() > deadline) throw new Error(`${what} was still there ${KILL_SETTLE_MS / 1000} s after it was killed`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function modalConformance(sim: ModalSimulator, backends: Array<{ close(): Promise<void> }>): ConformanceOptions {
  return {
    name: 'modal',
    variant: 'simulator',
    createBackend: () => {
      const backend = createModalBackend(sim.clientOptions());
      backends.push(backend);
      return backend;
    },
    images: {
      basic: 'berth-test/busybox:latest',
      private: { ref: '127.0.0.1:5000/berth/private-busybox:latest', auth: { username: 'berth', password: 'berth-test-secret' } },
      missing: '127.0.0.1:5000/berth/does-not-exist:nope',
    },
    // The simulator runs public sandboxes on the engine's default bridge: its gateway is this machine.
    reachableListener: async () => listenForTokens(await bridgeGateway(docker)),
    // Another of this machine's addresses, reached through the gateway: the allowlist cases' denied one.
    secondListener: async () => listenForTokens(await secondHostAddress(docker)),
    // Port 443 of the gateway: the simulator matches domains on connections to that port, as Modal does.
    serverNameListener: async () => listenForServerNames(await bridgeGateway(docker)),
    faults: {
      // The container killed under Modal, as a worker failure would.
      kill: (env) => killTagged([`modal.tag.berth.environment=${env.id}`], `faults.kill: the container of ${env.id}`),
      // A service's own sandbox (services.ts), found by its tags.
      killService: (env, service) =>
        killTagged([`modal.tag.berth.environment=${env.id}`, `modal.tag.berth.service=${service}`], `faults.killService: service ${service} of ${env.id}`),
      listLeftovers: async () =>
        (await containers([`modal.tag.berth.session=${SESSION_ID}`, `modal.tag.berth.owner-pid=${process.pid}`])).map(
          (c) => c.Labels['modal.tag.berth.environment'] ?? c.Id,
        ),
    },
  };
}

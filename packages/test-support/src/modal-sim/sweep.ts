// What simulators in processes that died (killed mid-test, so close() never ran) left on the
// engine: their containers and image tags name the owner's PID, and a dead owner's are removed.
import type Docker from 'dockerode';
import { IMAGE_REPO } from './images.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it is just not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function sweepOrphans(docker: Docker, simLabel: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: [simLabel, 'berth.owner-pid'] } });
  for (const c of containers) {
    const pid = Number(c.Labels['berth.owner-pid']);
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  }
  // And their i6pn networks (i6pn.ts), once their containers are gone.
  for (const n of await docker.listNetworks({ filters: { label: [simLabel, 'berth.owner-pid'] } })) {
    const pid = Number(n.Labels?.['berth.owner-pid']);
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined);
  }
  const images = await docker.listImages({ filters: { reference: [IMAGE_REPO] } });
  for (const tag of images.flatMap((i) => i.RepoTags ?? [])) {
    const pid = Number(/^[^:]+:p(\d+)-/.exec(tag)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      await docker
        .getImage(tag)
        .remove()
        .catch(() => undefined);
  }
}

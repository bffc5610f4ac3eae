// Built images are a cache berth keeps between runs (README: Builds), so a test that builds from a
// context removes what it built; the test run's teardown fails on any it finds left.
import Docker from 'dockerode';
import { buildTag, hashBuildContext } from '@berth/core/backend-kit';

/** Remove the images the Docker backend built from these contexts (tagged by their content), if there. */
export async function removeBuiltImages(contexts: readonly string[]): Promise<void> {
  const docker = new Docker();
  for (const context of contexts) {
    const tag = buildTag(await hashBuildContext({ context, dockerfile: 'Dockerfile', args: {}, network: 'public' }));
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
  }
}

// The test registry's login, as `docker login 127.0.0.1:5000` writes it: berth reads credentials
// from Docker's config (DOCKER_CONFIG), never from an option a test would have to pass.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const REGISTRY = '127.0.0.1:5000';

/** A Docker config directory at `dir` holding the test registry's login; returns `dir`. */
export async function writeRegistryLogin(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const auth = Buffer.from('berth:berth-test-secret').toString('base64');
  await writeFile(join(dir, 'config.json'), JSON.stringify({ auths: { [REGISTRY]: { auth } } }));
  return dir;
}

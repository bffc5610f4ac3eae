// Running Modal's official Python SDK (the venv test/setup/setup.sh builds from
// requirements-sdk.lock.txt) against the simulator: where the venv is, and the environment a run
// needs. Shared by the SDK scenario test and the berth-vs-SDK bench.
import { appendFileSync, cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const STATE = process.env.BERTH_TEST_STATE ?? '/var/lib/berth-test';
export const SDK_VENV = process.env.BERTH_MODAL_SDK_VENV ?? join(STATE, 'modal-sdk-venv');
export const SDK_PYTHON = join(SDK_VENV, 'bin', 'python');
export const SDK_LOCK = new URL('./requirements-sdk.lock.txt', import.meta.url).pathname;

/** Refuses to go on without the venv, saying how to get it. */
export function assertSdkVenv(): void {
  if (!existsSync(SDK_PYTHON)) throw new Error(`no Modal SDK venv at ${SDK_VENV}: run test/setup/setup.sh (it installs ${SDK_LOCK})`);
}

/**
 * The SDK trusts only its certifi bundle (grpclib: create_default_context(cafile=certifi.where());
 * SSL_CERT_FILE is ignored). So each run gets its own copy of the venv's certifi package, with the
 * simulator's CA (new at every start) appended, first on PYTHONPATH: the shared venv is never
 * changed, and runs at the same time do not meet. Returns the PYTHONPATH entry.
 */
export function certifiOverlay(ca: string, into: string): string {
  const site = sitePackages();
  const overlay = join(into, 'pythonpath');
  cpSync(join(site, 'certifi'), join(overlay, 'certifi'), { recursive: true });
  appendFileSync(join(overlay, 'certifi', 'cacert.pem'), `\n# berth's Modal simulator (this run only)\n${ca}`);
  return overlay;
}

/** The venv's site-packages (lib/python3.X/site-packages, whatever the X). */
function sitePackages(): string {
  const lib = join(SDK_VENV, 'lib');
  const site = readdirSync(lib)
    .filter((d) => d.startsWith('python'))
    .map((d) => join(lib, d, 'site-packages'))
    .find((d) => existsSync(join(d, 'certifi')));
  if (!site) throw new Error(`no certifi in ${lib}/python*/site-packages`);
  return site;
}

/** The environment of an SDK run against a simulator: its URL and token, no ~/.modal.toml, the per-run CA. */
export function sdkEnv(sim: { url: string; ca: string; tokenId: string; tokenSecret: string }, dir: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    LANG: 'C.UTF-8',
    PYTHONPATH: certifiOverlay(sim.ca, dir),
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    MODAL_SERVER_URL: sim.url,
    MODAL_TOKEN_ID: sim.tokenId,
    MODAL_TOKEN_SECRET: sim.tokenSecret,
    MODAL_CONFIG_PATH: join(dir, 'no-modal.toml'),
  };
}

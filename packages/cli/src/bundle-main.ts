// berth as one file (scripts/bundle.mjs bundles this module; harbor's plugin ships the result):
// the CLI with every backend linked in, and the guardian started from this same file, so that
// nothing beyond Node and the file is needed. Everything is imported lazily: a guardian waiting
// for its owner loads only what it runs.
import { fileURLToPath } from 'node:url';

/** The argument that makes this file the guardian instead of the CLI. */
const GUARDIAN_ARG = '--berth-guardian';

/** Each backend's guardian module, by backend name (what the message's `module` says here). */
const GUARDIANS: Record<string, () => Promise<unknown>> = {
  docker: () => import('@berth/backend-docker/guardian'),
  k8s: () => import('@berth/backend-k8s/guardian'),
  modal: () => import('@berth/backend-modal/guardian'),
};

if (process.argv[2] === GUARDIAN_ARG) {
  const { runGuardian } = await import('@berth/core/bundle');
  await runGuardian({
    check(message) {
      if (!(message.module in GUARDIANS)) throw new Error(`this bundle has no guardian module "${message.module}"`);
    },
    load: async (message) => (await GUARDIANS[message.module]!()) as Awaited<ReturnType<Parameters<typeof runGuardian>[0]['load']>>,
  }).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`berth guardian ${process.pid}: stopped: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
} else {
  const { useGuardianLauncher } = await import('@berth/core/bundle');
  useGuardianLauncher({ script: fileURLToPath(import.meta.url), args: [GUARDIAN_ARG], module: (_target, backend) => backend });
  const { linkBackends } = await import('./backends.js');
  linkBackends({
    docker: () => import('@berth/backend-docker') as Promise<Record<string, unknown>>,
    k8s: () => import('@berth/backend-k8s') as Promise<Record<string, unknown>>,
    modal: () => import('@berth/backend-modal') as Promise<Record<string, unknown>>,
  });
  await import('./bin.js');
}

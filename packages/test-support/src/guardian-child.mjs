// A library user's process for the guardian tests: starts sandboxes, says so, then waits to be
// killed (no signal handlers of its own: SIGTERM ends it at once, as Node does by default).
//   node packages/test-support/src/guardian-child.mjs <docker|k8s|modal> <count> <tag>
// Every sandbox carries the label berth.test-guardian=<tag>. Prints "ready" once all run.
// GUARDIAN_CHILD_OPTIONS (backend options) and GUARDIAN_CHILD_SPEC (spec fields), JSON, if set.
// GUARDIAN_CHILD_POOL=<n>: besides, a warm pool of n idle sandboxes of the spec, filled before "ready".
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';

const [kind, countArg, tag] = process.argv.slice(2);
const options = JSON.parse(process.env.GUARDIAN_CHILD_OPTIONS ?? '{}');
const factories = { docker: createDockerBackend, k8s: createK8sBackend, modal: createModalBackend };
const backend = factories[kind](options);
const spec = {
  image: 'berth-test/busybox:latest',
  network: 'none',
  ...JSON.parse(process.env.GUARDIAN_CHILD_SPEC ?? '{}'),
  labels: { 'berth.test-guardian': tag },
};
await Promise.all(Array.from({ length: Number(countArg) }, () => backend.start(spec)));
if (process.env.GUARDIAN_CHILD_POOL) await backend.pool(spec, { size: Number(process.env.GUARDIAN_CHILD_POOL) }).fill();
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);

// A library user's process for the guardian tests: starts sandboxes, says so, then waits to be
// killed (no signal handlers of its own: SIGTERM ends it at once, as Node does by default).
//   node test/support/guardian-child.mjs <docker|k8s> <count> <tag> [image]
// Every sandbox carries the label berth.test-guardian=<tag>. Prints "ready" once all run.
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';

const [kind, countArg, tag, image] = process.argv.slice(2);
const backend = kind === 'k8s' ? createK8sBackend() : createDockerBackend();
const spec = { image: image ?? 'berth-test/busybox:latest', network: 'none', labels: { 'berth.test-guardian': tag } };
await Promise.all(Array.from({ length: Number(countArg) }, () => backend.start(spec)));
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);

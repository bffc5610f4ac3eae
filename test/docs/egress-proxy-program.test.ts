// The egress proxy pod's program in @berth/backend-k8s is generated (scripts/egress-proxy-program.mjs
// bundles egress-proxy-main.ts and the kit's EgressProxy): a change to either without regenerating
// it fails here, so the pod never runs an older proxy than the kit's.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('egress-proxy-program.generated.ts is what its script writes (run `npm run generate:egress-proxy`)', async () => {
  const script = new URL('../../scripts/egress-proxy-program.mjs', import.meta.url).pathname;
  const run = await promisify(execFile)(process.execPath, [script, '--check']).catch((error: { stderr?: string; code?: number }) => error);
  expect('stderr' in run && run.stderr ? run.stderr : '', 'the generated program is stale').toBe('');
  expect((run as { stdout?: string }).stdout).toMatch(/is current \(\d+ KiB\)/);
});

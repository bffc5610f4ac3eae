// The conformance suite through warm pools on the Modal simulator: every sandbox a claimed one,
// which must be indistinguishable from a fresh one.
import { afterAll } from 'vitest';
import { describeBackendConformance, POOLED_SKIP, SERVICE_CASES } from '@berth/conformance';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { modalConformance } from './support/modal-conformance.js';

const sim = await ModalSimulator.start();
const backends: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

// Services through a pool are Docker's pooled run's; here the run without pools has them.
describeBackendConformance({
  ...modalConformance(sim, backends),
  pool: { size: 1 },
  skip: { ...POOLED_SKIP, ...Object.fromEntries(SERVICE_CASES.map((id) => [id, 'the run without pools has them; claims with services are run on Docker'])) },
});

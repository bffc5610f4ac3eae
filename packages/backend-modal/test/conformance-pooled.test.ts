// The conformance suite through warm pools on the Modal simulator: every sandbox a claimed one,
// which must be indistinguishable from a fresh one.
import { afterAll } from 'vitest';
import { describeBackendConformance, POOLED_SKIP } from '@berth/conformance';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { modalConformance } from './support/modal-conformance.js';

const sim = await ModalSimulator.start();
const backends: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

describeBackendConformance({ ...modalConformance(sim, backends), pool: { size: 1 }, skip: POOLED_SKIP });

// The behavioural conformance suite against the Modal simulator (test/sim): the real wire protocol
// over TLS, each sandbox a real container on the Docker engine, images pulled from the real
// registry with the credentials the spec gave.
import { afterAll } from 'vitest';
import { describeBackendConformance } from '@berth/conformance';
import { ModalSimulator } from '@berth/test-support/modal-sim';
import { modalConformance } from './support/modal-conformance.js';

const sim = await ModalSimulator.start();
const backends: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await sim.close();
});

describeBackendConformance(modalConformance(sim, backends));

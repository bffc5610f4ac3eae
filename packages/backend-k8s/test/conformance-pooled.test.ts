// The conformance suite through warm pools on the test cluster: every pod a claimed one, which must
// be indistinguishable from a fresh one.
import { afterAll } from 'vitest';
import { describeBackendConformance, listenForTokens, POOLED_SKIP, SERVICE_CASES } from '@berth/conformance';
import { POD_BRIDGE_ADDRESS } from '@berth/test-support/kube-cluster';
import { k8sConformance } from './support/k8s-conformance.js';

const probe = await listenForTokens(POD_BRIDGE_ADDRESS);
afterAll(() => probe.close());

const options = k8sConformance(probe);
describeBackendConformance({
  ...options,
  pool: { size: 1 },
  // Services through a pool are Docker's pooled run's; here the run without pools has them (a claimed pod is the same manifest).
  skip: { ...POOLED_SKIP, ...Object.fromEntries(SERVICE_CASES.map((id) => [id, 'the run without pools has them; claims with services are run on Docker'])) },
  // Its own tag of the private image: the suite removes and re-pulls it, as the run without pools does.
  images: { ...options.images, private: { ...options.images.private!, ref: '127.0.0.1:5000/berth/private-busybox:k8s-pooled' } },
});

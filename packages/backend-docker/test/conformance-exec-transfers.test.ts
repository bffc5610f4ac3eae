// The conformance suite a second time, with every transfer forced through tar over exec: the path
// Kubernetes and Modal use, proven on the real engine before any other backend relies on it.
import { createDockerBackend } from '@berth/backend-docker';
import { describeBackendConformance, POOL_CASES, SERVICE_CASES } from '@berth/conformance';
import { dockerConformance, dockerTestOptions } from './support/docker-conformance.js';

describeBackendConformance({
  ...dockerConformance,
  variant: 'exec transfers',
  createBackend: () => createDockerBackend({ ...dockerTestOptions, transfers: 'exec' }),
  skip: {
    ...Object.fromEntries(POOL_CASES.map((id) => [id, 'warm pools do not depend on how files move: the archive-transfer run has them'])),
    ...Object.fromEntries(SERVICE_CASES.map((id) => [id, 'services do not depend on how files move: the archive-transfer run (and the pooled one) has them'])),
  },
  // Its own tag of the private image: the suite removes and re-pulls it, and the archive-transfer
  // run does the same with :latest in parallel.
  images: {
    ...dockerConformance.images,
    private: { ...dockerConformance.images.private!, ref: '127.0.0.1:5000/berth/private-busybox:exec' },
  },
});

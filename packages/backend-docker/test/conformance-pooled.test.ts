// The conformance suite once more, every sandbox claimed from a warm pool (pooled()): a claimed
// sandbox must be indistinguishable from a fresh one.
import { describeBackendConformance, POOLED_SKIP } from '@berth/conformance';
import { dockerConformance } from './support/docker-conformance.js';

describeBackendConformance({
  ...dockerConformance,
  pool: { size: 1 },
  skip: POOLED_SKIP,
  // Its own tag of the private image: the suite removes and re-pulls it, as the other runs do in parallel.
  images: {
    ...dockerConformance.images,
    private: { ...dockerConformance.images.private!, ref: '127.0.0.1:5000/berth/private-busybox:pooled' },
  },
});

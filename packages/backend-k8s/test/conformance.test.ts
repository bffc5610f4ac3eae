// The behavioural conformance suite against a real one-node Kubernetes (test/kube/setup.sh):
// pods on containerd, exec over the API server's WebSocket, transfers as tar over exec. The backend
// runs as a service account bound only to the Role the package ships; faults come as the admin.
import { afterAll } from 'vitest';
import { describeBackendConformance, listenForTokens } from '@berth/conformance';
import { POD_BRIDGE_ADDRESS } from '@berth/test-support/kube-cluster';
import { k8sConformance } from './support/k8s-conformance.js';

const probe = await listenForTokens(POD_BRIDGE_ADDRESS);
afterAll(() => probe.close());

describeBackendConformance(k8sConformance(probe));

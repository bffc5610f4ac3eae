// The behavioural conformance suite against a real one-node Kubernetes (test/kube/setup.sh):
// pods on containerd, exec over the API server's WebSocket, transfers as tar over exec. The backend
// runs as a service account bound only to the Role the package ships; faults come as the admin.
// Allowlist names go through berth's egress proxy pod here (options.egressProxy); the pooled run resolves them.
import { afterAll } from 'vitest';
import { describeBackendConformance, listenForTokens, startDnsResponder } from '@berth/conformance';
import { POD_BRIDGE_ADDRESS } from '@berth/test-support/kube-cluster';
import { k8sConformance } from './support/k8s-conformance.js';

const probe = await listenForTokens(POD_BRIDGE_ADDRESS);
// What berth's egress proxy pod resolves names with: every .test name to this machine's bridge
// address, where the listeners are (nothing leaves the machine).
const names = await startDnsResponder(POD_BRIDGE_ADDRESS, 0, 'test');
afterAll(() => Promise.all([probe.close(), names.close()]));

describeBackendConformance(k8sConformance(probe, { nameserver: `${POD_BRIDGE_ADDRESS}:${names.port}` }));

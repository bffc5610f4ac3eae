// The test cluster (test/kube/setup.sh): its kubeconfig, and the runtime's own tools for faults.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KubeConfig, CoreV1Api } from '@kubernetes/client-node';

export const KUBE_STATE = process.env.BERTH_KUBE_STATE ?? '/var/lib/berth-kube';
export const ADMIN_KUBECONFIG = `${KUBE_STATE}/admin.kubeconfig`;
/** What the backend runs as in the tests: a service account bound only to berth's Role, in NAMESPACE. */
export const BERTH_KUBECONFIG = `${KUBE_STATE}/berth.kubeconfig`;
export const NAMESPACE = 'berth-test';
/**
 * This machine's address on the pods' host-only bridge (test/kube/setup.sh's CNI gateway): public
 * pods reach a listener here, and kube-router cuts off pods under berth's deny-all policy. (Not a
 * port in 30000-32767: kube-router lets pods reach node ports on the node whatever the policy.)
 */
export const POD_BRIDGE_ADDRESS = '10.244.0.1';
/** This machine's second address on the pods' bridge (no pod gets it: test/kube/setup.sh), for allowlists: one address allowed, the other not. */
export const POD_BRIDGE_SECOND_ADDRESS = '10.244.0.254';
const CTR = ['--address', '/run/berth-containerd/containerd.sock', '-n', 'k8s.io'];

export const run = promisify(execFile);

/** The admin's API client, for the tests' own look at the cluster (the backend uses its own). */
export function adminApi(): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(ADMIN_KUBECONFIG);
  return kc.makeApiClient(CoreV1Api);
}

/** containerd's CLI on the node, as the runtime sees things. */
export function ctr(...args: string[]) {
  return run('ctr', [...CTR, ...args]);
}

/** A kubernetes.io/dockerconfigjson secret for the test registry on 127.0.0.1:5000 (made once). */
export async function ensurePullSecret(name: string): Promise<void> {
  const auth = Buffer.from('berth:berth-test-secret').toString('base64');
  const config = JSON.stringify({ auths: { '127.0.0.1:5000': { auth } } });
  try {
    await adminApi().createNamespacedSecret({
      namespace: NAMESPACE,
      body: { metadata: { name }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(config).toString('base64') } },
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
}

/**
 * The taint faults.test.ts puts on the node. Every other test's pods tolerate it, so that files
 * running at the same time are not held up by it.
 */
export const FAULT_TAINT = { key: 'berth.test/fault', value: 'on', effect: 'NoSchedule' } as const;
export const TOLERATE_FAULT = [{ key: FAULT_TAINT.key, operator: 'Exists', effect: FAULT_TAINT.effect }];

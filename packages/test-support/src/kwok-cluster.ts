// The scale test bed (test/kube/scale/setup.sh): a second control plane on loopback whose 1,000
// nodes are kwok's fakes. Pods there turn Running at once and run nothing; for load, not behaviour.
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';

export const KWOK_STATE = process.env.BERTH_KUBE_SCALE_STATE ?? '/var/lib/berth-kube-scale';
export const KWOK_API = 'https://127.0.0.1:16443';
export const KWOK_NAMESPACE = 'berth-scale';

export interface KwokCluster {
  /** system:masters, for the test's own look at the cluster. */
  adminKubeconfig: string;
  /** What berth runs as: a service account bound only to berth's Role, in `namespace`. */
  berthKubeconfig: string;
  namespace: string;
  api: string;
}

const SETUP_HINT = 'run `bash test/kube/scale/setup.sh` (as root, after test/kube/setup.sh) to start it';

/** The scale bed's kubeconfigs, once its API server answers ready; throws saying how to start it otherwise. */
export async function kwokCluster(): Promise<KwokCluster> {
  const pki = `${KWOK_STATE}/pki`;
  let credentials: { ca: Buffer; cert: Buffer; key: Buffer };
  try {
    const [ca, cert, key] = await Promise.all(['ca.crt', 'admin.crt', 'admin.key'].map((f) => readFile(`${pki}/${f}`)));
    credentials = { ca: ca!, cert: cert!, key: key! };
  } catch (error) {
    throw new Error(`the kwok scale cluster is not set up (no credentials in ${pki}): ${SETUP_HINT}`, { cause: error });
  }
  const status = await readyz(credentials).catch((error: unknown) => {
    throw new Error(`the kwok scale cluster's API server (${KWOK_API}) does not answer: ${SETUP_HINT}`, { cause: error });
  });
  if (status !== 200) throw new Error(`the kwok scale cluster's API server (${KWOK_API}) is not ready (HTTP ${status} to /readyz): ${SETUP_HINT}`);
  return {
    adminKubeconfig: `${KWOK_STATE}/admin.kubeconfig`,
    berthKubeconfig: `${KWOK_STATE}/berth.kubeconfig`,
    namespace: KWOK_NAMESPACE,
    api: KWOK_API,
  };
}

function readyz(credentials: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${KWOK_API}/readyz`, { ...credentials, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('no answer to /readyz within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

// What the Kubernetes conformance runs share: the backend's options, the images and the fault
// hooks (as the admin). The caller gives the listener the backend's in-pod network check connects to.
import Docker from 'dockerode';
import { SESSION_ID } from '@berth/core';
import { buildTag, hashBuildContext, systemResolver } from '@berth/core/backend-kit';
import { createRegistryImageBuilder } from '@berth/backend-docker';
import { listenForServerNames, listenForTokens, type ConformanceOptions, type ReachableListener } from '@berth/conformance';
import { createK8sBackend } from '@berth/backend-k8s';
import { BERTH_KUBECONFIG, NAMESPACE, POD_BRIDGE_ADDRESS, POD_BRIDGE_SECOND_ADDRESS, adminApi, ctr, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

// Builds: the local Docker engine builds, pushes to the test registry, and the node pulls from there.
const builder = createRegistryImageBuilder({ repository: '127.0.0.1:5000/berth/builds', auth: { username: 'berth', password: 'berth-test-secret' } });

const ALLOWED_NAME = 'listener.berth-conformance.test';

/**
 * The suite's options; `probe` is what the backend's in-pod network checks connect to (the test
 * cluster has no kube-proxy, so pods cannot reach the API server's service; they reach this machine
 * on their bridge).
 */
export function k8sConformance(probe: Pick<ReachableListener, 'host' | 'port'>, egress?: { nameserver: string }): ConformanceOptions {
  return {
    name: 'k8s',
    // With `egress`: names matched by berth's egress proxy pod (the image: this machine's node, imported by
    // test/kube/setup.sh), which resolves them at `egress.nameserver`; without it (the pooled run), resolved to addresses.
    ...(egress ? { serverNameListener: () => listenForServerNames(POD_BRIDGE_ADDRESS) } : {}),
    // probeRegistries: only the loopback registry is asked (the basic image is on the node only).
    createBackend: () =>
      createK8sBackend({
        kubeconfig: { file: BERTH_KUBECONFIG },
        namespace: NAMESPACE,
        tolerations: TOLERATE_FAULT,
        probeRegistries: ['127.0.0.1:5000'],
        builder,
        // waitMs 60 s, not the default 30: in a full CI run kube-router's syncs wait on the iptables
        // lock behind Docker's (other files switch container networks all the time), and twice a
        // public pod was still cut off 30 s after its label changed.
        networkPolicy: { probe: { host: probe.host, port: probe.port }, waitMs: 60_000 },
        // The allowlist DNS case's name: the reachable listener's address.
        resolveHost: async (name) => (name === ALLOWED_NAME ? [POD_BRIDGE_ADDRESS] : systemResolver(name)),
        ...(egress ? { egressProxy: { image: 'berth-test/node:20', nameservers: [egress.nameserver] } } : {}),
      }),
    allowedName: ALLOWED_NAME,
    // Network cases: public pods reach this machine on their bridge; kube-router enforces 'none'.
    reachableListener: () => listenForTokens(POD_BRIDGE_ADDRESS),
    // The allowlist cases' denied address: the bridge's second (no pod gets it).
    secondListener: () => listenForTokens(POD_BRIDGE_SECOND_ADDRESS),
    images: {
      basic: 'berth-test/busybox:latest',
      // Credentials in the spec: the backend makes the pull secret itself (see pull-secrets.test.ts for secretName).
      private: { ref: '127.0.0.1:5000/berth/private-busybox:k8s', auth: { username: 'berth', password: 'berth-test-secret' } },
      missing: '127.0.0.1:5000/berth/does-not-exist:nope',
    },
    specDefaults: { network: 'public' },
    faults: {
      // The service's container, killed by the node's runtime (containerd); the kubelet then counts a restart.
      killService: async (env, service) => {
        const read = () => adminApi().readNamespacedPod({ name: env.id, namespace: NAMESPACE });
        const status = (await read()).status?.initContainerStatuses?.find((c) => c.name === service);
        const id = status?.containerID?.replace(/^containerd:\/\//, '');
        if (!id) throw new Error(`no container of service ${service} in pod ${env.id}`);
        await ctr('tasks', 'kill', '--signal', 'SIGKILL', id);
        for (let i = 0; i < 300; i++) {
          const now = (await read()).status?.initContainerStatuses?.find((c) => c.name === service);
          if ((now?.restartCount ?? 0) > 0 || now?.state?.terminated || now?.containerID !== status?.containerID) return;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error(`service ${service} of pod ${env.id} did not stop after its kill`);
      },
      // Deleted from outside, as an eviction or an operator would.
      kill: async (env) => {
        await adminApi().deleteNamespacedPod({ name: env.id, namespace: NAMESPACE, gracePeriodSeconds: 0 });
        // Until the API server says the pod is gone (the contract of faults.kill).
        for (let i = 0; i < 300; i++) {
          const gone = await adminApi()
            .readNamespacedPod({ name: env.id, namespace: NAMESPACE })
            .then(
              () => false,
              (error: { code?: number }) => error.code === 404,
            );
          if (gone) return;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error(`pod ${env.id} was still there 30 s after its deletion`);
      },
      forgetImage: async (ref) => {
        await ctr('images', 'rm', ref).catch(() => undefined);
      },
      // The engine's built image; the pushed copy stays in the test registry (its tag is the content hash).
      forgetBuild: async (context) => {
        const tag = buildTag(await hashBuildContext({ context, dockerfile: 'Dockerfile', args: {}, network: 'none' }));
        await new Docker()
          .getImage(tag)
          .remove({ force: true })
          .catch(() => undefined);
      },
      listLeftovers: async () => {
        const pods = await adminApi().listNamespacedPod({
          namespace: NAMESPACE,
          labelSelector: `berth.session=${SESSION_ID},berth.owner-pid=${process.pid}`,
        });
        return pods.items.map((p) => p.metadata?.name ?? '?');
      },
    },
  };
}

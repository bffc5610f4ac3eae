// What berth does, as the cluster's own clients see it: Debian's kubectl and python3-kubernetes
// list berth's pods with their labels and exec into one; and the backend's identity is namespaced.
import { afterAll, describe, expect, it } from 'vitest';
import type { Environment } from '@berth/core';
import { createK8sBackend } from '@berth/backend-k8s';
import { ADMIN_KUBECONFIG, BERTH_KUBECONFIG, NAMESPACE, run, TOLERATE_FAULT } from '@berth/test-support/kube-cluster';

const envs: Environment[] = [];
afterAll(() => Promise.all(envs.map((e) => e.teardown())));

const PYTHON = `
import json, sys
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config(sys.argv[1])
api = client.CoreV1Api()
pod = api.read_namespaced_pod(sys.argv[2], sys.argv[3])
out = stream(api.connect_get_namespaced_pod_exec, sys.argv[2], sys.argv[3], command=["cat", "/tmp/hello"], stderr=True, stdin=False, stdout=True, tty=False)
print(json.dumps({"labels": pod.metadata.labels, "phase": pod.status.phase, "out": out}))
`;

describe("the cluster's own clients see berth's pods", () => {
  it("kubectl and the Python client list the pod with berth's labels and exec into it", async () => {
    const env = await createK8sBackend({ kubeconfig: { file: BERTH_KUBECONFIG }, tolerations: TOLERATE_FAULT }).start({
      image: 'berth-test/busybox:latest',
      network: 'public',
      labels: { 'berth.example': 'clients' },
    });
    envs.push(env);
    await env.exec('echo from-berth > /tmp/hello');

    const listed = JSON.parse(
      (await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, '-n', NAMESPACE, 'get', 'pods', '-l', 'berth.managed=true', '-o', 'json'])).stdout,
    ) as {
      items: Array<{ metadata: { name: string; labels: Record<string, string> } }>;
    };
    const mine = listed.items.find((p) => p.metadata.name === env.id);
    expect(mine?.metadata.labels).toMatchObject({ 'berth.managed': 'true', 'berth.environment': env.id, 'berth.example': 'clients' });
    expect((await run('kubectl', ['--kubeconfig', ADMIN_KUBECONFIG, '-n', NAMESPACE, 'exec', env.id, '--', 'cat', '/tmp/hello'])).stdout).toBe('from-berth\n');

    // Debian's python3 (the one python3-kubernetes is installed for), not one earlier on PATH.
    const py = JSON.parse((await run('/usr/bin/python3', ['-c', PYTHON, ADMIN_KUBECONFIG, env.id, NAMESPACE])).stdout) as {
      labels: Record<string, string>;
      phase: string;
      out: string;
    };
    expect(py).toMatchObject({ phase: 'Running', out: 'from-berth\n', labels: { 'berth.environment': env.id } });
  });

  it('the backend runs as a service account that can use its namespace and nothing cluster-wide', async () => {
    const can = (args: string[]) =>
      run('kubectl', ['--kubeconfig', BERTH_KUBECONFIG, 'auth', 'can-i', ...args]).then(
        (r) => r.stdout.trim(),
        (e: { stdout?: string }) => e.stdout?.trim(),
      );
    expect(await can(['create', 'pods', '-n', NAMESPACE])).toBe('yes');
    expect(await can(['create', 'pods', '--subresource=exec', '-n', NAMESPACE])).toBe('yes');
    expect(await can(['list', 'pods', '--all-namespaces'])).toBe('no');
    expect(await can(['create', 'pods', '-n', 'default'])).toBe('no');
    const listAll = await run('kubectl', ['--kubeconfig', BERTH_KUBECONFIG, 'get', 'pods', '--all-namespaces']).then(
      () => 'allowed',
      (e: { stderr?: string }) => e.stderr ?? '',
    );
    expect(listAll).toMatch(/forbidden/i);
  });
});

import { AuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { hintRemedy, hintText, remedied, type Hint, type ImageRef, type PreflightCheck } from '@berth/core';
import { imageCheck, preflightFailure, resolvePullCredential, type PullCredential, type ResolvedPull } from '@berth/core/backend-kit';
import { BACKEND, IDENTITY, type Cluster, type K8sTarget } from './cluster.js';
import { apiMessage, idempotent, mapApiError, statusOf } from './k8s-errors.js';
import { nodeMisfits } from './node-fit.js';
import type { K8sBackendOptions } from './options.js';
import type { PodNetwork } from './pod-network.js';

/** What berth does in its namespace (deploy/role.yaml); each is asked with a SelfSubjectAccessReview. */
const NEEDED: ReadonlyArray<[verb: string, resource: string, subresource?: string, group?: string]> = [
  ['create', 'pods'],
  ['get', 'pods'],
  ['list', 'pods'],
  ['watch', 'pods'],
  ['delete', 'pods'],
  ['patch', 'pods'],
  ['create', 'pods', 'exec'],
  ['list', 'events'],
  ['create', 'secrets'],
  ['delete', 'secrets'],
  // Network 'none' and switching: the namespace's deny-all policy.
  ['get', 'networkpolicies', undefined, 'networking.k8s.io'],
  ['create', 'networkpolicies', undefined, 'networking.k8s.io'],
  // Allowlists: each such pod's own policy, replaced on a switch, deleted at teardown.
  ['patch', 'networkpolicies', undefined, 'networking.k8s.io'],
  ['delete', 'networkpolicies', undefined, 'networking.k8s.io'],
];

/** Why this namespace: a context that names none gets 'default', said, not silently. */
function namespaceOrigin(target: K8sTarget): Hint {
  if (target.namespaceFrom === 'options') return remedied('namespace', 'options.namespace', (option) => `namespace from ${option}`);
  if (target.namespaceFrom === 'context') return `namespace from context "${target.context}"`;
  return `context "${target.context}" names no namespace: 'default' is used`;
}

/** The API answers in the namespace; pass or fail, the line names the server and the namespace, and why that one. */
export async function checkApi(cluster: Cluster): Promise<PreflightCheck> {
  const { server, namespace } = cluster;
  const originHint = namespaceOrigin(cluster.target());
  const origin = hintText(originHint);
  try {
    await idempotent(() => cluster.core.listNamespacedPod({ namespace, limit: 1 }));
    return { name: 'api', status: 'ok', message: `the Kubernetes API at ${server} lists pods in ${namespace} (${origin})`, ...hintRemedy(originHint) };
  } catch (error) {
    const mapped = mapApiError(error, { operation: 'preflight' }) ?? error;
    const said = mapped instanceof Error ? mapped.message : String(mapped);
    return { ...preflightFailure('api', mapped, `${said} (API server ${server}, namespace ${namespace}; ${origin})`), ...hintRemedy(originHint) };
  }
}

/** Can berth's identity do what the backend needs, in its namespace? */
export async function checkRbac(cluster: Cluster): Promise<PreflightCheck> {
  const authz = cluster.api(AuthorizationV1Api);
  const denied: string[] = [];
  for (const [verb, resource, subresource, group] of NEEDED) {
    const review = await authz.createSelfSubjectAccessReview({
      body: {
        spec: { resourceAttributes: { namespace: cluster.namespace, verb, resource, ...(subresource ? { subresource } : {}), ...(group ? { group } : {}) } },
      },
    });
    if (!review.status?.allowed) denied.push(`${verb} ${resource}${subresource ? `/${subresource}` : ''}`);
  }
  if (denied.length === 0) return { name: 'rbac', status: 'ok', message: `berth's identity may do what it needs in ${cluster.namespace}` };
  return {
    name: 'rbac',
    status: 'fail',
    message: `berth's identity may not ${denied.join(', ')} in namespace ${cluster.namespace}: bind it to the Role in @berth/backend-k8s/deploy/role.yaml`,
  };
}

/** The credential a named pull secret holds for this registry, if it has one. */
async function fromSecret(cluster: Cluster, name: string, ref: ImageRef): Promise<PullCredential | undefined> {
  const secret = await cluster.core.readNamespacedSecret({ name, namespace: cluster.namespace });
  const raw = secret.data?.['.dockerconfigjson'];
  if (!raw) return undefined;
  const auths =
    (
      JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as {
        auths?: Record<string, { username?: string; password?: string; auth?: string; identitytoken?: string }>;
      }
    ).auths ?? {};
  const entry = Object.entries(auths).find(([server]) => server.replace(/^https?:\/\//, '').replace(/\/.*$/, '') === ref.registry)?.[1];
  if (!entry) return undefined;
  if (entry.identitytoken) return { serverAddress: ref.registry, identityToken: entry.identitytoken };
  const [username, ...rest] =
    entry.username !== undefined
      ? [entry.username, entry.password ?? '']
      : Buffer.from(entry.auth ?? '', 'base64')
          .toString('utf8')
          .split(':');
  return username ? { serverAddress: ref.registry, username, password: rest.join(':') } : undefined;
}

/**
 * Named pull secrets exist, and the image can be pulled with the credentials the pod would have
 * (asked of the registry directly: no node is asked to pull).
 */
export async function checkImage(
  cluster: Cluster,
  options: K8sBackendOptions,
  { image: ref, auth, policy }: ResolvedPull,
  named: readonly string[],
): Promise<PreflightCheck> {
  const ctx = { operation: 'preflight' as const, backend: BACKEND };
  let credential: PullCredential | undefined;
  try {
    for (const name of named) {
      try {
        credential ??= await fromSecret(cluster, name, ref);
      } catch (error) {
        if (statusOf(error) === 404)
          return { name: 'image', status: 'fail', message: `the pull secret "${name}" does not exist in namespace ${cluster.namespace}` };
        return { name: 'image', status: 'warn', message: `cannot read the pull secret "${name}" (${apiMessage(error)}): the image was not checked` };
      }
    }
    credential ??= await resolvePullCredential(ref, auth, options, { ...ctx, factory: IDENTITY.factory });
  } catch (error) {
    return preflightFailure('image', error);
  }
  if (policy === 'never') return { name: 'image', status: 'warn', message: `pullPolicy is 'never': whether a node has ${ref.original} is not checked` };
  return imageCheck(ref, credential, { backend: BACKEND, probeRegistries: options.probeRegistries });
}

/**
 * Could any node take the pod (taints such as DiskPressure, cordons, the node selector, resources)?
 * Nodes are cluster-wide, so this needs the optional deploy/node-reader.yaml; without it the check
 * says so and passes.
 */
export async function checkNodes(cluster: Cluster, pod: V1Pod): Promise<PreflightCheck> {
  let nodes;
  try {
    nodes = await idempotent(() => cluster.core.listNode());
  } catch (error) {
    if (statusOf(error) === 403) {
      return {
        name: 'nodes',
        status: 'warn',
        message:
          'berth may not list nodes, so whether one can schedule the pod was not checked; bind the ClusterRole in @berth/backend-k8s/deploy/node-reader.yaml to check',
      };
    }
    return { name: 'nodes', status: 'warn', message: `the nodes could not be listed (${apiMessage(error)}): not checked` };
  }
  const verdicts = nodes.items.map((node) => ({ name: node.metadata?.name ?? '?', misfits: nodeMisfits(node, pod) }));
  const fit = verdicts.filter((v) => v.misfits.length === 0).map((v) => v.name);
  if (fit.length > 0)
    return {
      name: 'nodes',
      status: 'ok',
      message: `${fit.length} of ${verdicts.length} node(s) can schedule the pod (${fit.slice(0, 5).join(', ')}${fit.length > 5 ? ', ...' : ''})`,
    };
  const why = verdicts
    .slice(0, 5)
    .map((v) => `${v.name}: ${v.misfits.join('; ')}`)
    .join(' | ');
  return {
    name: 'nodes',
    status: 'fail',
    message: `no node can schedule the pod, so it would stay Pending until startupMs runs out: ${why || 'the cluster has no nodes'} (tolerate the taint with options.tolerations, free the node, or change the resources; an autoscaling cluster may add a node later)`,
  };
}

/**
 * Does the cluster enforce NetworkPolicy (for a spec asking for network 'none' or switching)? As
 * declared in options.networkPolicy.enforced, as this backend already proved, or proved now by
 * `probePod`: a pod of the spec's image started on 'none', which proves it on its way up (see
 * PodNetwork) and is removed.
 */
export async function checkNetworkPolicy(network: PodNetwork, probePod: () => Promise<void>): Promise<PreflightCheck> {
  const name = 'network-policy';
  if (network.verdict === true)
    return {
      name,
      status: 'ok',
      message: network.declared
        ? "options.networkPolicy.enforced says the cluster enforces NetworkPolicy (not probed): network 'none' relies on it"
        : "the cluster enforces NetworkPolicy (proved by an earlier pod of this backend): network 'none' holds",
    };
  if (network.verdict === false)
    return { name, status: 'fail', message: "the cluster does not enforce NetworkPolicy, so network 'none' and switching are refused" };
  const started = Date.now();
  try {
    await probePod();
  } catch (error) {
    return preflightFailure(name, error);
  }
  return {
    name,
    status: 'ok',
    message: `the cluster enforces NetworkPolicy: a probe pod under berth's deny-all policy was cut off, reached the probe address without it, and was cut off again (${Date.now() - started} ms, pod start included)`,
  };
}

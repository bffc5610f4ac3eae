import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, ServerConfiguration, createConfiguration, findHomeDir } from '@kubernetes/client-node';
import { NodeHttpLibrary } from './api-http.js';
import { ConfigError, remedied } from '@berth/core';
import { keepConnectionsAlive } from './keep-alive-agent.js';
import type { K8sBackendOptions } from './options.js';

import { BACKEND, IDENTITY } from './identity.js';

export { BACKEND, IDENTITY };

/** Where the backend's calls go, as resolved from the options and the kubeconfig (no API call). */
export interface K8sTarget {
  /** https://host:port of the API server. */
  server: string;
  /** The kubeconfig's current context ('inClusterContext' for a pod's service account). */
  context: string;
  namespace: string;
  /** Where the namespace came from: options.namespace, the context's own, or 'default' because the context names none. */
  namespaceFrom: 'options' | 'context' | 'default';
}

/** The API client and namespace of one backend instance, made on first use (the factory does no I/O). */
export class Cluster {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly namespace: string;
  readonly namespaceFrom: K8sTarget['namespaceFrom'];
  /** https://host:port of the API server, for the exec WebSocket. */
  readonly server: string;
  /** The exec subprotocol the API server chose, once known: v4 servers get framed stdin. */
  execProtocol: string | undefined;
  /** Ping interval on exec connections. */
  readonly execKeepAliveMs: number;

  constructor(options: K8sBackendOptions) {
    this.kc = loadKubeConfig(options);
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) {
      throw new ConfigError({
        operation: 'config',
        backend: BACKEND,
        path: 'options.kubeconfig',
        ...remedied('kube-context', 'set a context, or pass options.kubeconfig', (fix) => `the kubeconfig has no current cluster: ${fix}`),
      });
    }
    this.server = cluster.server.replace(/\/+$/, '');
    keepConnectionsAlive(this.kc);
    this.core = this.api(CoreV1Api);
    this.execKeepAliveMs = options.execKeepAliveMs ?? 30_000;
    const fromContext = this.kc.getContextObject(this.kc.getCurrentContext())?.namespace;
    this.namespace = options.namespace ?? fromContext ?? 'default';
    this.namespaceFrom = options.namespace ? 'options' : fromContext ? 'context' : 'default';
  }

  /** An API client of this cluster, on node:https and the kept-alive connections (see api-http.ts). */
  api<T>(type: new (config: ReturnType<typeof createConfiguration>) => T): T {
    return new type(
      createConfiguration({ baseServer: new ServerConfiguration(this.server, {}), authMethods: { default: this.kc }, httpApi: new NodeHttpLibrary() }),
    );
  }

  target(): K8sTarget {
    return { server: this.server, context: this.kc.getCurrentContext(), namespace: this.namespace, namespaceFrom: this.namespaceFrom };
  }
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

function loadKubeConfig(options: K8sBackendOptions): KubeConfig {
  // A path alone, as kubectl's --kubeconfig flag takes it, is a file.
  const source = typeof options.kubeconfig === 'string' ? { file: options.kubeconfig } : options.kubeconfig;
  if (source instanceof KubeConfig) return source;
  const kc = new KubeConfig();
  const defaults = !source?.inCluster && !source?.file;
  // Checked before loading: client-node's default, when it finds nothing, is http://localhost:8080,
  // and every call then fails on "HTTP protocol is not allowed when skipTLSVerify is not set".
  const missing = defaults ? noDefaultKubeconfig() : undefined;
  if (missing) {
    throw new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.kubeconfig',
      ...remedied('kubeconfig', 'pass options.kubeconfig, set KUBECONFIG, or create ~/.kube/config', (fix) => `no kubeconfig found: ${missing}; ${fix}`),
    });
  }
  try {
    if (source?.inCluster) kc.loadFromCluster();
    else if (source?.file) kc.loadFromFile(source.file);
    else kc.loadFromDefault();
    if (source?.context) kc.setCurrentContext(source.context);
  } catch (error) {
    throw new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.kubeconfig',
      ...remedied(
        'kubeconfig-file-context',
        'pass options.kubeconfig { file, context } or set KUBECONFIG',
        (fix) => `cannot load the kubeconfig (${error instanceof Error ? error.message : String(error)}): ${fix}`,
      ),
      cause: error,
    });
  }
  return kc;
}

/**
 * The places loadFromDefault looks, in its order: KUBECONFIG, ~/.kube/config, then a pod's service
 * account (as client-go: KUBERNETES_SERVICE_HOST and _PORT set, and the token mounted). What was
 * looked for, when none is there; undefined when one is.
 */
function noDefaultKubeconfig(): string | undefined {
  // On Windows client-node also asks WSL: left to it.
  if (process.env.KUBECONFIG || process.platform === 'win32') return undefined;
  const home = findHomeDir();
  const config = home ? join(home, '.kube', 'config') : undefined;
  if (config && existsSync(config)) return undefined;
  const { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port } = process.env;
  const token = existsSync(SERVICE_ACCOUNT_TOKEN);
  if (host && port && token) return undefined;
  const notInPod =
    !host || !port ? 'KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set' : `there is no service account token at ${SERVICE_ACCOUNT_TOKEN}`;
  return `KUBECONFIG is not set, ${config ? `${config} does not exist` : 'there is no home directory for ~/.kube/config'}, and this is not a pod in a cluster (${notInPod})`;
}

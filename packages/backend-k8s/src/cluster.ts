import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ConfigError } from '@berth/core';
import type { K8sBackendOptions } from './options.js';

export const BACKEND = 'k8s';

/** The API client and namespace of one backend instance, made on first use (the factory does no I/O). */
export class Cluster {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly namespace: string;
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
      throw new ConfigError({ operation: 'config', backend: BACKEND, path: 'options.kubeconfig', message: 'the kubeconfig has no current cluster: set a context, or pass options.kubeconfig' });
    }
    this.server = cluster.server.replace(/\/+$/, '');
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.execKeepAliveMs = options.execKeepAliveMs ?? 30_000;
    this.namespace = options.namespace ?? this.kc.getContextObject(this.kc.getCurrentContext())?.namespace ?? 'default';
  }
}

function loadKubeConfig(options: K8sBackendOptions): KubeConfig {
  const source = options.kubeconfig;
  if (source instanceof KubeConfig) return source;
  const kc = new KubeConfig();
  try {
    if (source?.inCluster) kc.loadFromCluster();
    else if (source?.file) kc.loadFromFile(source.file);
    else kc.loadFromDefault();
    if (source && !(source instanceof KubeConfig) && source.context) kc.setCurrentContext(source.context);
  } catch (error) {
    throw new ConfigError({
      operation: 'config',
      backend: BACKEND,
      path: 'options.kubeconfig',
      message: `cannot load the kubeconfig (${error instanceof Error ? error.message : String(error)}): pass options.kubeconfig { file, context } or set KUBECONFIG`,
      cause: error,
    });
  }
  return kc;
}

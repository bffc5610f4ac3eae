// The module the guardian process imports (see the guardian in @berth/core's README): the backend
// rebuilt from the kubeconfig this process resolved (its contents, sent over the guardian's pipe),
// so its sweep removes a dead process's pods and pull secrets.
import { KubeConfig } from '@kubernetes/client-node';
import { createK8sBackend, type K8sBackend } from './backend.js';

export interface K8sGuardianConfig {
  /** The resolved kubeconfig, as KubeConfig.exportConfig() writes it (credentials included). */
  kubeconfig: string;
  namespace: string;
}

export function guardianBackend(config: K8sGuardianConfig): K8sBackend {
  const kc = new KubeConfig();
  kc.loadFromString(config.kubeconfig);
  return createK8sBackend({ kubeconfig: kc, namespace: config.namespace, guardian: false });
}

/**
 * The Kubernetes client configuration of the store and the drivers, and the team-namespace
 * watches they share. Which store a configuration picks, with the families it keeps, is
 * resources/store-of-record.ts (createStore).
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { KeepAliveKubeConfig } from './kubernetes/keep-alive-config';
import { NamespacedWatches } from './kubernetes/namespaced-watches';
import { TeamNamespaces } from './kubernetes/team-namespaces';

export function kubeConfigFor(config: NonNullable<Config['kubernetes']>): KubeConfig {
  // Keep-alive: one connection per concurrent call, not a TLS handshake per call.
  const kc = new KeepAliveKubeConfig();
  // A kubeconfig file when given (or KUBECONFIG / ~/.kube/config), else the pod's service account.
  if (config.kubeconfigPath) kc.loadFromFile(config.kubeconfigPath);
  else kc.loadFromDefault();
  return kc;
}

/**
 * The team namespaces and the watches in them, for the store and the drivers to share: one
 * watch per collection and team namespace for the whole service. The store starts and stops them.
 */
export function teamNamespaceWatchesFor(config: NonNullable<Config['kubernetes']>, logger: Logger): NamespacedWatches {
  const kubeConfig = kubeConfigFor(config);
  const namespaces = new TeamNamespaces({ kubeConfig, systemNamespace: config.systemNamespace, logger, binding: config.teamNamespaceBinding });
  return new NamespacedWatches(namespaces, { kubeConfig, logger });
}

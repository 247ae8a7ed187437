/** Picks the store of record for a configuration: embedded (a data directory) or Kubernetes. */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { families } from '../resources/registry';
import { EmbeddedStore, EmbeddedStoreOptions } from './embedded';
import { KubernetesStore } from './kubernetes/store';
import type { Store } from './types';

export function kubeConfigFor(config: NonNullable<Config['kubernetes']>): KubeConfig {
  const kc = new KubeConfig();
  // A kubeconfig file when given (or KUBECONFIG / ~/.kube/config), else the pod's service account.
  if (config.kubeconfigPath) kc.loadFromFile(config.kubeconfigPath);
  else kc.loadFromDefault();
  return kc;
}

/** The embedded store of a configuration: its data directory and the key its secrets are sealed with. */
export function embeddedStoreOptions(config: Config): EmbeddedStoreOptions {
  return { dataDir: config.dataDir, encryption: { key: config.secrets.encryptionKey, previousKeys: config.secrets.previousEncryptionKeys } };
}

export function createStore(config: Config, logger: Logger): Store {
  if (!config.kubernetes) return new EmbeddedStore(embeddedStoreOptions(config));
  return new KubernetesStore({
    kubeConfig: kubeConfigFor(config.kubernetes),
    kinds: families.map((f) => ({ kind: f.kind, plural: f.plural, idPrefix: f.idPrefix })),
    systemNamespace: config.kubernetes.systemNamespace,
    logger,
  });
}

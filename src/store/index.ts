/** Picks the store of record for a configuration: embedded (a data directory) or Kubernetes. */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { families } from '../resources/registry';
import { EmbeddedStore, EmbeddedStoreOptions } from './embedded';
import type { DataDirHealth } from './data-dir-health';
import { KubernetesStore } from './kubernetes/store';
import { KeepAliveKubeConfig } from './kubernetes/keep-alive-config';
import { NamespacedWatches } from './kubernetes/namespaced-watches';
import { TeamNamespaces } from './kubernetes/team-namespaces';
import type { Store, StoredObject } from './types';
import type { ListedKind } from './list-index';
import type { AnyFamily } from '../resources/family';
import { holdsQuota } from '../resources/quota';

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

const DEFAULT_HIDDEN_STATES = ['deleted', 'destroyed'];

/** What the stores index of a family for its lists (list-index.ts), from its definition. */
export function listedKindOf(family: AnyFamily): ListedKind {
  const rules = family.listing ?? {};
  const { defaultState } = rules;
  return {
    kind: family.kind,
    nameOf: (spec) => family.nameOf(spec),
    ...(defaultState ? { stateOf: (o: StoredObject) => ((o.status as { status?: string } | undefined)?.status ?? defaultState) } : {}),
    hiddenStates: rules.hiddenStates ?? DEFAULT_HIDDEN_STATES,
    filterFields: rules.filterFields ?? [],
    acrossTeams: rules.acrossTeams,
    counted: (o) => holdsQuota(family, o),
  };
}

export const listedKinds = (): ListedKind[] => families.map(listedKindOf);

/**
 * The embedded store of a configuration: its data directory, the key its secrets are
 * sealed with, and `health`, the data directory's, shared with an embedded event bus there.
 */
export function embeddedStoreOptions(config: Config, logger?: Logger, health?: DataDirHealth): EmbeddedStoreOptions {
  return {
    dataDir: config.dataDir,
    compactBytes: config.storeCompactBytes,
    health,
    logger,
    listed: listedKinds(),
    encryption: { key: config.secrets.encryptionKey, previousKeys: config.secrets.previousEncryptionKeys },
  };
}

/** `watches`: the team namespaces' watches, shared with the drivers (teamNamespaceWatchesFor); made for the store alone when not given. */
export function createStore(config: Config, logger: Logger, health?: DataDirHealth, watches?: NamespacedWatches): Store {
  if (!config.kubernetes) return new EmbeddedStore(embeddedStoreOptions(config, logger, health));
  return new KubernetesStore({
    kubeConfig: kubeConfigFor(config.kubernetes),
    kinds: families.map((f) => ({ kind: f.kind, plural: f.plural, idPrefix: f.idPrefix })),
    systemNamespace: config.kubernetes.systemNamespace,
    logger,
    listed: listedKinds(),
    watches,
    teamNamespaceBinding: config.kubernetes.teamNamespaceBinding,
  });
}

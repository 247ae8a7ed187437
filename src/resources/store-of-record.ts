/**
 * Picks the store of record for a configuration: embedded (a data directory) or Kubernetes,
 * keeping the families of resources/registry.ts, each indexed for its lists as its
 * definition says. The stores know kinds, not families: this is where the two meet.
 */
import type { Logger } from 'pino';
import type { Config } from '../config';
import { families } from './registry';
import { lifecycleState, type AnyFamily } from './family';
import { holdsQuota } from './quota';
import { EmbeddedStore, EmbeddedStoreOptions } from '../store/embedded';
import type { DataDirHealth } from '../store/data-dir-health';
import { KubernetesStore } from '../store/kubernetes/store';
import type { NamespacedWatches } from '../store/kubernetes/namespaced-watches';
import type { Store, StoredObject } from '../store/types';
import type { ListedKind } from '../store/list-index';
import { kubeConfigFor } from '../store';

const DEFAULT_HIDDEN_STATES = ['deleted', 'destroyed'];

/** What the stores index of a family for its lists (list-index.ts), from its definition. */
export function listedKindOf(family: AnyFamily): ListedKind {
  const rules = family.listing ?? {};
  const { defaultState } = rules;
  return {
    kind: family.kind,
    nameOf: (spec) => family.nameOf(spec),
    ...(defaultState ? { stateOf: (o: StoredObject) => lifecycleState(o) ?? defaultState } : {}),
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
    parsedObjects: config.storeParsedObjects,
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

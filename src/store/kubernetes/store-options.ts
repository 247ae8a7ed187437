/** What a Kubernetes store (store.ts) is made with. */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ListedKind } from '../list-index';
import { KindInfo } from './custom-resource';
import { NamespacedWatches } from './namespaced-watches';
import { TeamNamespaceBinding } from './team-namespaces';

export interface KubernetesStoreOptions {
  kubeConfig: KubeConfig;
  kinds: KindInfo[];
  /** Namespace of service-wide secrets (the cursor key). */
  systemNamespace: string;
  logger: Logger;
  /** The kinds lists read, indexed for pages (list-index.ts). */
  listed?: readonly ListedKind[];
  /** Watchdog limit; tests shorten it. */
  watchSilenceLimitMs?: number;
  /** Objects per page of a (re)list (paged-list.ts); tests shorten it. */
  listPageSize?: number;
  /**
   * The team namespaces and the watches in them, shared with the drivers (one watch per
   * collection and namespace for all); made here when not given. The store starts and stops them.
   */
  watches?: NamespacedWatches;
  /** Whom to bind in the namespaces the store makes, when it makes `watches` itself (team-namespaces.ts). */
  teamNamespaceBinding?: TeamNamespaceBinding;
}

/**
 * Watches what the Kubernetes drivers made (everything labelled
 * app.kubernetes.io/managed-by=cloudplane, in the team namespaces) and names the resource an
 * object belongs to whenever it changes or goes away: a Pod or Deployment deleted by
 * hand, a hand edit, a Service given its address. The reconciler then looks at that
 * resource at once, where the periodic resync would find it only later (in the manner of
 * controller-runtime's Owns()). A watch that cannot be had (RBAC, the API server away)
 * retries on its own and costs only that promptness: the resync still repairs.
 *
 * The operator may watch only in the namespaces it made (docs/architecture/cluster-mode.md, "RBAC"), so
 * each collection is watched per team namespace, on the watches the store's secrets use
 * (store/kubernetes/namespaced-watches.ts): a collection two drivers follow is one watch.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeObject } from '../../store/kubernetes/watcher';
import { ID_LABEL, teamOfNamespace } from '../../store/kubernetes/names';
import { Collection, NamespacedWatches } from '../../store/kubernetes/namespaced-watches';
import { TeamNamespaces } from '../../store/kubernetes/team-namespaces';
import { fieldOf } from '../../lib/unknown-values';

export type MadeKind = Collection;

export type Changed = (team: string, id: string) => void;

/** Where a driver watches: the cluster, and the team namespaces' watches when shared (the service's). */
export interface MadeWatchOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** Shared with the store; without it (a driver on its own) the driver follows the team namespaces itself. */
  watches?: NamespacedWatches;
}

export function watchMade(o: MadeWatchOptions, kinds: MadeKind[], changed: Changed): () => void {
  const watches = o.watches ?? new NamespacedWatches(new TeamNamespaces(o), o);
  const own = o.watches ? null : watches;
  const tell = (object: KubeObject) => {
    const id = fieldOf(object.metadata.labels, ID_LABEL);
    if (typeof id === 'string' && id && object.metadata.namespace) changed(teamOfNamespace(object.metadata.namespace, o.systemNamespace), id);
  };
  // A relist (at the start, after 410 Gone) may have missed deletions: each resource is looked at again.
  const follows = kinds.map((kind) =>
    watches.follow(kind, {
      replace: (_namespace, items) => {
        for (const item of items) tell(item);
      },
      upsert: tell,
      remove: tell,
    }),
  );
  // Not awaited: the first lists retry until they succeed, and the reconcilers must not wait for them.
  if (own) void own.namespaces.start();
  return () => {
    for (const f of follows) f.stop();
    own?.stop();
    own?.namespaces.stop();
  };
}

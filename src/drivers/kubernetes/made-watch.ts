/**
 * Watches what the Kubernetes drivers made (everything labelled
 * app.kubernetes.io/managed-by=cloudplane, in every namespace) and names the resource an
 * object belongs to whenever it changes or goes away: a Pod or Deployment deleted by
 * hand, a hand edit, a Service given its address. The reconciler then looks at that
 * resource at once, where the periodic resync would find it only later (in the manner of
 * controller-runtime's Owns()). A watch that cannot be had (RBAC, the API server away)
 * retries on its own and costs only that promptness: the resync still repairs.
 */
import { AppsV1Api, CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CollectionWatcher, KubeObject } from '../../store/kubernetes/watcher';
import { ID_LABEL, teamOfNamespace } from '../../store/kubernetes/names';
import { MANAGED_BY, MANAGED_BY_LABEL } from './objects';

/** A collection across namespaces, and how to list it (a list needs the typed client). */
interface MadeCollection {
  /** e.g. /api/v1/pods, /apis/apps/v1/deployments. */
  path: string;
  list(labelSelector: string): Promise<{ items: unknown[]; metadata?: { resourceVersion?: string } }>;
}

/**
 * The kinds the drivers make, each with where it is watched and how it is listed.
 * API call: drivers: Pods, watched
 * API call: store and drivers: secrets, watched
 * API call: drivers: applied objects, watched
 * API call: drivers: Deployments, watched
 */
const COLLECTIONS = {
  pods: (kc: KubeConfig) => ({ path: '/api/v1/pods', list: (labelSelector: string) => kc.makeApiClient(CoreV1Api).listPodForAllNamespaces({ labelSelector }) }),
  services: (kc: KubeConfig) => ({ path: '/api/v1/services', list: (labelSelector: string) => kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces({ labelSelector }) }),
  configmaps: (kc: KubeConfig) => ({ path: '/api/v1/configmaps', list: (labelSelector: string) => kc.makeApiClient(CoreV1Api).listConfigMapForAllNamespaces({ labelSelector }) }),
  secrets: (kc: KubeConfig) => ({ path: '/api/v1/secrets', list: (labelSelector: string) => kc.makeApiClient(CoreV1Api).listSecretForAllNamespaces({ labelSelector }) }),
  persistentvolumeclaims: (kc: KubeConfig) => ({
    path: '/api/v1/persistentvolumeclaims',
    list: (labelSelector: string) => kc.makeApiClient(CoreV1Api).listPersistentVolumeClaimForAllNamespaces({ labelSelector }),
  }),
  deployments: (kc: KubeConfig) => ({ path: '/apis/apps/v1/deployments', list: (labelSelector: string) => kc.makeApiClient(AppsV1Api).listDeploymentForAllNamespaces({ labelSelector }) }),
} satisfies Record<string, (kc: KubeConfig) => MadeCollection>;

export type MadeKind = keyof typeof COLLECTIONS;

export type Changed = (team: string, id: string) => void;

const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;

export function watchMade(kubeConfig: KubeConfig, systemNamespace: string, logger: Logger, kinds: MadeKind[], changed: Changed): () => void {
  const watch = new Watch(kubeConfig);
  const collections: MadeCollection[] = kinds.map((kind) => COLLECTIONS[kind](kubeConfig));
  const tell = (object: KubeObject) => {
    const id = (object.metadata.labels as Record<string, string> | undefined)?.[ID_LABEL];
    if (id && object.metadata.namespace) changed(teamOfNamespace(object.metadata.namespace, systemNamespace), id);
  };
  const watchers = collections.map(
    (collection) =>
      new CollectionWatcher(
        watch,
        {
          path: collection.path,
          labelSelector: SELECTOR,
          list: async () => {
            const answer = await collection.list(SELECTOR);
            return { items: answer.items as KubeObject[], resourceVersion: answer.metadata?.resourceVersion ?? '' };
          },
        },
        // A relist (at the start, after 410 Gone) may have missed deletions: each resource is looked at again.
        { replace: (items) => items.forEach(tell), upsert: tell, remove: tell },
        logger,
      ),
  );
  // Not awaited: the first list retries until it succeeds, and the reconcilers must not wait for it.
  for (const watcher of watchers) void watcher.start();
  return () => watchers.forEach((w) => w.stop());
}

/**
 * Watches of what the operator keeps and makes in the team namespaces (team-namespaces.ts),
 * one namespace at a time: it may not list or watch Secrets, Pods and the rest across
 * namespaces. One watch per collection and namespace, however many parts of the operator
 * follow it (the store's secrets and the VPN driver's are one watch), started when a
 * namespace is known and stopped when it goes; only what carries the managed-by label.
 *
 * The price is a watch per collection per team namespace where one across namespaces did
 * (docs/architecture/cluster-mode.md, "RBAC"): each is an idle HTTP/2 stream until something changes.
 */
import { AppsV1Api, CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CollectionWatcher, KubeObject } from './watcher';
import { listInPages, ListPage } from './paged-list';
import { MANAGED_BY, STORE_RECORD_LABEL } from './names';
import { TeamNamespaces } from './team-namespaces';
import { getOrCreate } from '../../lib/maps';

type ListQuery = { namespace: string; labelSelector: string; limit: number; _continue?: string };

/**
 * The collections followed, each with its path in a namespace and its list (a typed client's).
 * API call: store and drivers: secrets, watched
 * API call: store: records, watched
 * API call: drivers: Pods, watched
 * API call: drivers: applied objects, watched
 * API call: drivers: Deployments, watched
 */
const COLLECTIONS = {
  secrets: {
    path: (ns: string) => `/api/v1/namespaces/${ns}/secrets`,
    list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(CoreV1Api).listNamespacedSecret(q),
  },
  // The store's records alone (store/kubernetes/entry-objects.ts), not the drivers' ConfigMaps.
  storeRecords: {
    path: (ns: string) => `/api/v1/namespaces/${ns}/configmaps`,
    list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(CoreV1Api).listNamespacedConfigMap(q),
    labelSelector: `${MANAGED_BY},${STORE_RECORD_LABEL}=true`,
  },
  pods: { path: (ns: string) => `/api/v1/namespaces/${ns}/pods`, list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(CoreV1Api).listNamespacedPod(q) },
  services: {
    path: (ns: string) => `/api/v1/namespaces/${ns}/services`,
    list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(CoreV1Api).listNamespacedService(q),
  },
  persistentvolumeclaims: {
    path: (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
    list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(CoreV1Api).listNamespacedPersistentVolumeClaim(q),
  },
  deployments: {
    path: (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`,
    list: (kc: KubeConfig, q: ListQuery) => kc.makeApiClient(AppsV1Api).listNamespacedDeployment(q),
  },
} satisfies Record<string, { path: (namespace: string) => string; list: (kc: KubeConfig, query: ListQuery) => Promise<unknown>; labelSelector?: string }>;

export type Collection = keyof typeof COLLECTIONS;

export interface CollectionFollower {
  /** A namespace's whole contents after a (re)list. */
  replace(namespace: string, items: KubeObject[]): void;
  upsert(object: KubeObject): void;
  remove(object: KubeObject): void;
  /** The namespace is gone: what was kept of it goes too. */
  forget?(namespace: string): void;
}

export interface NamespacedWatchesOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** Objects per page of a (re)list; tests shorten it. */
  listPageSize?: number;
  watchSilenceLimitMs?: number;
}

interface Running {
  watcher: CollectionWatcher;
  /** Settles after the first list. */
  listed: Promise<void>;
}

export class NamespacedWatches {
  private readonly watchClient: Watch;
  private readonly followers = new Map<Collection, Set<CollectionFollower>>();
  /** collection -> namespace -> its watch. */
  private readonly running = new Map<Collection, Map<string, Running>>();
  private stopListening: (() => void) | null = null;

  constructor(
    readonly namespaces: TeamNamespaces,
    private readonly o: NamespacedWatchesOptions,
  ) {
    this.watchClient = new Watch(o.kubeConfig);
  }

  /**
   * Follows a collection in every team namespace, now and as they come. `ready` settles
   * once each namespace known now has been listed; a follower that joins a watch already
   * running hears from it only what changes from then on.
   */
  follow(collection: Collection, follower: CollectionFollower): { ready: Promise<void>; stop: () => void } {
    getOrCreate(this.followers, collection, () => new Set()).add(follower);
    this.stopListening ??= this.namespaces.listen({
      added: (namespace) => Promise.all([...this.followers.keys()].map((c) => this.watch(c, namespace))).then(() => undefined),
      removed: (namespace) => {
        this.unwatchNamespace(namespace);
      },
    }).stop;
    const ready = Promise.all(this.namespaces.all().map((namespace) => this.watch(collection, namespace))).then(() => undefined);
    return {
      ready,
      stop: () => {
        this.unfollow(collection, follower);
      },
    };
  }

  /**
   * Whether every watch of the collection that has listed is established: one still at its
   * first list (a namespace just made, empty) is not behind on anything.
   */
  healthy(collection: Collection): boolean {
    return [...(this.running.get(collection)?.values() ?? [])].every((r) => r.watcher.healthy || !r.watcher.hasSynced());
  }

  /** Drops the collection's watches and starts new ones (the API server came back). */
  restart(collection: Collection): void {
    for (const { watcher } of this.running.get(collection)?.values() ?? []) watcher.restartNow();
  }

  /** How many watches run, for the docs' arithmetic and the tests. */
  count(): number {
    return [...this.running.values()].reduce((sum, byNamespace) => sum + byNamespace.size, 0);
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = null;
    for (const byNamespace of this.running.values()) for (const { watcher } of byNamespace.values()) watcher.stop();
    this.running.clear();
    this.followers.clear();
  }

  private watch(collection: Collection, namespace: string): Promise<void> {
    const byNamespace = getOrCreate(this.running, collection, () => new Map());
    const existing = byNamespace.get(namespace);
    if (existing) return existing.listed;
    const followers = () => this.followers.get(collection) ?? new Set<CollectionFollower>();
    const source: { path: (namespace: string) => string; list: (kc: KubeConfig, query: ListQuery) => Promise<unknown>; labelSelector?: string } =
      COLLECTIONS[collection];
    const labelSelector = source.labelSelector ?? MANAGED_BY;
    const watcher = new CollectionWatcher(
      this.watchClient,
      {
        path: source.path(namespace),
        labelSelector,
        list: () =>
          listInPages(
            this.o.listPageSize,
            // The client's types leave metadata and its name optional; the API server always sends both.
            async (query) => (await source.list(this.o.kubeConfig, { namespace, labelSelector, ...query })) as ListPage,
          ),
      },
      {
        replace: (items) => {
          followers().forEach((f) => {
            f.replace(namespace, items);
          });
        },
        upsert: (object) => {
          followers().forEach((f) => {
            f.upsert(object);
          });
        },
        remove: (object) => {
          followers().forEach((f) => {
            f.remove(object);
          });
        },
      },
      this.o.logger,
      { silenceLimitMs: this.o.watchSilenceLimitMs },
    );
    const listed = watcher.start();
    byNamespace.set(namespace, { watcher, listed });
    return listed;
  }

  private unwatchNamespace(namespace: string): void {
    for (const [collection, byNamespace] of this.running) {
      byNamespace.get(namespace)?.watcher.stop();
      byNamespace.delete(namespace);
      for (const follower of this.followers.get(collection) ?? []) follower.forget?.(namespace);
    }
  }

  private unfollow(collection: Collection, follower: CollectionFollower): void {
    const followers = this.followers.get(collection);
    followers?.delete(follower);
    if (followers?.size) return;
    // Nobody follows it any more: its watches go.
    this.followers.delete(collection);
    for (const { watcher } of this.running.get(collection)?.values() ?? []) watcher.stop();
    this.running.delete(collection);
  }
}

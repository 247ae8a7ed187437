/**
 * The store's custom resources, watched: one robust list+watch (watcher.ts) per kind,
 * across every namespace, its lists read in pages (paged-list.ts). What they bring goes to
 * the id claims (id-claims.ts), which settle what is cached under which id.
 */
import { CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CollectionWatcher } from './watcher';
import { listInPages, ListPage } from './paged-list';
import { KindInfo, Raw } from './custom-resource';
import { IdClaims } from './id-claims';
import { GROUP, VERSION } from './names';

export interface CustomResourceWatchesOptions {
  kubeConfig: KubeConfig;
  kinds: readonly KindInfo[];
  custom: CustomObjectsApi;
  /** Runs a request to the API server (api-server-calls.ts). */
  call: <T>(request: () => Promise<T>) => Promise<T>;
  claims: IdClaims;
  logger: Logger;
  /** Watchdog limit; tests shorten it. */
  watchSilenceLimitMs?: number;
  /** Objects per page of a (re)list; tests shorten it. */
  listPageSize?: number;
}

export class CustomResourceWatches {
  private readonly watchClient: Watch;
  private readonly watchers: CollectionWatcher<Raw>[] = [];

  constructor(private readonly o: CustomResourceWatchesOptions) {
    this.watchClient = new Watch(o.kubeConfig);
  }

  /** Starts a watch of each kind; resolves once each has listed its kind. */
  // API call: store: custom resources, watched
  async start(): Promise<void> {
    for (const info of this.o.kinds) {
      const watcher = new CollectionWatcher<Raw>(
        this.watchClient,
        {
          path: `/apis/${GROUP}/${VERSION}/${info.plural}`,
          list: () =>
            listInPages(this.o.listPageSize, (query) =>
              this.o.call<ListPage<Raw>>(() => this.o.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: info.plural, ...query })),
            ),
        },
        {
          replace: (items) => {
            this.o.claims.replaceKind(info, items);
          },
          upsert: (raw) => this.o.claims.upsert(info, raw),
          remove: (raw) => {
            this.o.claims.watchedRemoval(info, raw);
          },
        },
        this.o.logger,
        { silenceLimitMs: this.o.watchSilenceLimitMs },
      );
      this.watchers.push(watcher);
    }
    await Promise.all(this.watchers.map((w) => w.start()));
  }

  stop(): void {
    for (const watcher of this.watchers) watcher.stop();
  }

  /** Whether each watch has listed its kind. */
  get synced(): boolean {
    return this.watchers.every((w) => w.hasSynced());
  }

  get healthy(): boolean {
    return this.watchers.every((w) => w.healthy);
  }

  /** Drops every watch and starts new ones. */
  restart(): void {
    for (const watcher of this.watchers) watcher.restartNow();
  }
}

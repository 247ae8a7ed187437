/**
 * The Kubernetes backend of the store: one custom resource per object (spec = what the
 * user asked, status through the status subresource), teams as namespaces, secrets as
 * Secrets. Reads and lists are served from a cache fed by robust watches; writes go to
 * the API server with resourceVersion preconditions and update the cache with the
 * answer, so a client reads its own writes at once.
 *
 * When the API server cannot be reached, reads keep answering from the cache
 * (persistence `stale`) and writes fail with StoreUnavailableError (503).
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { AlreadyExistsError, ConflictError, NewObject, NotFoundError, PersistenceState, readAs, Store, StoredObject } from '../types';
import { nowIso } from '../../lib/time';
import { ObjectCache } from '../object-cache';
import { onlyOutboxDiffers } from '../outbox-only';
import { httpCode } from './http-code';
import { NamespacedWatches } from './namespaced-watches';
import { TeamNamespaces } from './team-namespaces';
import { orphansOnDelete } from '../deletion-policy';
import { CachedResource, isVersionedRaw, KindInfo, kubeStatusOf, newResource, Raw, recordStatusOf, whereOf } from './custom-resource';
import { CustomResourceWatches } from './custom-resource-watches';
import { WatchListeners } from '../watch-listeners';
import { IdClaims } from './id-claims';
import { KubernetesEntries } from './named-entries';
import { RECORD_OBJECTS, SECRET_OBJECTS } from './entry-objects';
import { ApiServerCalls } from './api-server-calls';
import { FINALIZER, GROUP, ID_LABEL, namespaceOfTeam, SYSTEM_TEAM, RECONCILE_REQUESTED_ANNOTATION, UPDATED_AT_ANNOTATION, VERSION } from './names';
import { FIRST_STATUS_KEY_SECRET, FirstStatusSeal } from './first-status';
import { FirstStatusWrites } from './first-status-writes';
import { KubernetesStoreOptions } from './store-options';
import { promised } from '../../lib/promised';
import { PreconditionedWrites } from './preconditioned-writes';

export type { KindInfo } from './custom-resource';
export type { KubernetesStoreOptions } from './store-options';

/** The garbage collector's finalizer of a deletion that orphans the dependents. */
const ORPHAN_FINALIZER = 'orphan';

export class KubernetesStore implements Store {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly kinds = new Map<string, KindInfo>();
  /** kind -> `team/id` -> the object, and the raw custom resource it came from; changed by the claims alone (id-claims.ts). */
  private readonly cache: ObjectCache<CachedResource>;
  /** Which custom resource is cached under which id: every one the API server answers goes in through them. */
  private readonly claims: IdClaims;
  readonly secrets: KubernetesEntries;
  readonly records: KubernetesEntries;
  private readonly listeners = new WatchListeners();
  readonly watch = this.listeners.watch;
  /** The watches of the custom resources, which feed the claims. */
  private readonly resources: CustomResourceWatches;
  /** The team namespaces (made on a first write) and the store's secrets and records, watched in each. */
  private readonly watches: NamespacedWatches;
  /** Updates, status writes and removals: with their resourceVersion precondition. */
  private readonly writes: PreconditionedWrites;
  /** Seals the first status a create carries, and opens it until the status is written (first-status.ts). */
  private readonly firstStatus = new FirstStatusSeal();
  /** Writes a first status no other status write took to the status subresource after a while. */
  private readonly firstStatusWrites: FirstStatusWrites;
  /** Every request to the API server goes through its call, which finds whether the server answers. */
  private readonly api = new ApiServerCalls(() => {
    this.rewatch();
  });

  // Reads are answered by the cache (set in the constructor), as the embedded store's are.
  readonly get: Store['get'];
  readonly peek: Store['peek'];
  readonly list: Store['list'];
  readonly keys: Store['keys'];
  readonly page: Store['page'];
  readonly named: Store['named'];
  readonly count: Store['count'];

  constructor(private readonly o: KubernetesStoreOptions) {
    this.custom = o.kubeConfig.makeApiClient(CustomObjectsApi);
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    const timing = { logger: o.logger, watchSilenceLimitMs: o.watchSilenceLimitMs };
    this.watches =
      o.watches ??
      new NamespacedWatches(new TeamNamespaces({ kubeConfig: o.kubeConfig, systemNamespace: o.systemNamespace, binding: o.teamNamespaceBinding, ...timing }), {
        kubeConfig: o.kubeConfig,
        listPageSize: o.listPageSize,
        ...timing,
      });
    for (const info of o.kinds) this.kinds.set(info.kind, info);
    this.cache = new ObjectCache(o.listed, (entry) => entry.object);
    // Each part takes what it needs of the options (the logger, the system namespace, the kinds...).
    this.claims = new IdClaims({ ...o, cache: this.cache, notify: this.listeners.notifyLater, custom: this.custom, firstStatus: this.firstStatus });
    this.writes = new PreconditionedWrites({ custom: this.custom, call: this.api.call, cache: this.cache, claims: this.claims });
    this.firstStatusWrites = new FirstStatusWrites({ peek: this.cache.peek, writeStatus: (object) => this.updateStatus(object), logger: o.logger });
    this.resources = new CustomResourceWatches({ ...o, kinds: [...this.kinds.values()], custom: this.custom, call: this.api.call, claims: this.claims });
    const entries = { ...o, core: this.core, call: this.api.call, ensureNamespace: (namespace: string) => this.ensureNamespace(namespace) };
    this.secrets = new KubernetesEntries(entries, SECRET_OBJECTS);
    this.records = new KubernetesEntries(entries, RECORD_OBJECTS);
    ({ get: this.get, peek: this.peek, list: this.list, keys: this.keys, page: this.page, named: this.named, count: this.count } = this.cache);
  }

  async start(): Promise<void> {
    // The team namespaces first: the operator's rights there are in effect before any call into one.
    await this.watches.namespaces.start();
    // Each watch's start resolves after its first list: the cache is complete before serving.
    await Promise.all([this.secrets.watch(this.watches), this.records.watch(this.watches)]);
    // The sealing key before the custom resources: their first list opens the sealed statuses.
    // Create-only, so that replicas starting at once end up with the same key.
    const stored = await this.secrets.add(SYSTEM_TEAM, FIRST_STATUS_KEY_SECRET, { key: randomBytes(32).toString('base64') });
    this.firstStatus.use(Buffer.from(stored.key, 'base64'));
    await this.resources.start();
  }

  stop(): Promise<void> {
    return promised(() => {
      this.firstStatusWrites.stop();
      this.resources.stop();
      this.secrets.stop();
      this.records.stop();
      this.watches.stop();
      this.watches.namespaces.stop();
      this.listeners.clear();
    });
  }

  persistence(): PersistenceState {
    if (!this.resources.synced || !this.secrets.listed || !this.records.listed) return 'unavailable';
    if (this.api.unreachable) return 'stale';
    return this.resources.healthy && this.watches.healthy('secrets') && this.watches.healthy('storeRecords') ? 'synced' : 'stale';
  }

  /** Drops every watch and starts new ones (used after the API server came back). */
  rewatch(): void {
    this.resources.restart();
    this.watches.restart('secrets');
    this.watches.restart('storeRecords');
  }

  // API call: store: custom resources, written
  async create<S, St>(input: NewObject<S, St>): Promise<StoredObject<S, St>> {
    const info = this.info(input.meta.kind);
    const namespace = this.namespaceOf(input.meta.team);
    await this.ensureNamespace(namespace);
    const now = nowIso();
    const body = newResource(info, input, namespace, now);
    // The status subresource ignores status on create: the first status rides sealed in
    // annotations of the one write (first-status.ts) rather than in a second write.
    Object.assign(body.metadata.annotations, this.firstStatus.annotationsFor(body, kubeStatusOf({ ...input.status, updated_at: now })));
    try {
      const created = await this.api.call<Raw>(() =>
        this.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: info.plural, body }),
      );
      const object = this.claims.created(info, created);
      if (object.meta.statusUnwritten) this.firstStatusWrites.schedule(info.kind, input.meta.team, input.meta.id);
      return readAs<S, St>(object);
    } catch (err) {
      if (httpCode(err) !== 409) throw err;
      await this.takeInOthers(info, namespace, body.metadata.name);
      throw new AlreadyExistsError(info.kind, input.meta.id);
    }
  }

  /**
   * The object another writer created under the id this create claimed, read at once: the
   * caller that reads it next must not wait for the watch to bring it (seen in CI, two
   * replicas issuing the configured API key at once).
   */
  // API call: store: custom resources, written
  private async takeInOthers(info: KindInfo, namespace: string, name: string): Promise<void> {
    const where = { group: GROUP, version: VERSION, namespace, plural: info.plural, name };
    const raw = await this.api.call<Raw>(() => this.custom.getNamespacedCustomObject(where)).catch(() => undefined);
    if (raw) this.claims.upsert(info, raw);
  }

  // API call: store: custom resources, written
  async update<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    const { info, entry } = this.entryOf(object);
    const raw = structuredClone(entry.raw);
    raw.metadata.resourceVersion = object.meta.resourceVersion;
    raw.metadata.labels = { ...object.meta.labels, [ID_LABEL]: object.meta.id };
    const requested = object.meta.reconcileRequestedAt;
    raw.metadata.annotations = {
      ...(raw.metadata.annotations ?? {}),
      [UPDATED_AT_ANNOTATION]: nowIso(),
      ...(requested !== undefined ? { [RECONCILE_REQUESTED_ANNOTATION]: requested } : {}),
    };
    const body = { ...raw, spec: object.spec };
    const answer = await this.writes.write(info, object, () => this.custom.replaceNamespacedCustomObject({ ...whereOf(info, raw), body }));
    return readAs<S, St>(this.claims.upsert(info, answer));
  }

  // API call: store: custom resources' status
  async updateStatus<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    const { info, entry } = this.entryOf(object);
    const raw = structuredClone(entry.raw);
    raw.metadata.resourceVersion = object.meta.resourceVersion;
    const previous = recordStatusOf(entry.raw.status);
    const next = object.status;
    // Draining the event outbox is not an update a client would see as one.
    const updatedAt = onlyOutboxDiffers(previous, next) ? previous.updated_at : nowIso();
    raw.status = kubeStatusOf({ ...next, updated_at: updatedAt ?? nowIso() });
    const answer = await this.writes.write(info, object, () => this.custom.replaceNamespacedCustomObjectStatus({ ...whereOf(info, raw), body: raw }));
    return readAs<S, St>(this.claims.upsert(info, answer));
  }

  // API call: store: custom resources, written
  async requestDeletion<S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St>> {
    const info = this.info(kind);
    const entry = this.cache.entry(kind, `${team}/${id}`);
    if (!entry) throw new NotFoundError(kind, id);
    if (entry.object.meta.deletionTimestamp) return readAs<S, St>(entry.object);
    const where = whereOf(info, entry.raw);
    try {
      await this.api.call(() => this.custom.deleteNamespacedCustomObject(where));
      const fresh = await this.api.call<Raw>(() => this.custom.getNamespacedCustomObject(where));
      return readAs<S, St>(this.claims.upsert(info, fresh));
    } catch (err) {
      if (httpCode(err) === 404) throw new NotFoundError(kind, id);
      throw err;
    }
  }

  // API call: store: custom resources, written
  async remove(kind: string, team: string, id: string, resourceVersion?: string): Promise<void> {
    const info = this.info(kind);
    const entry = this.cache.entry(kind, `${team}/${id}`);
    if (!entry) throw new NotFoundError(kind, id);
    const where = whereOf(info, entry.raw);
    let raw = structuredClone(entry.raw);
    raw.metadata.resourceVersion = resourceVersion ?? entry.object.meta.resourceVersion;
    let last: Raw = entry.raw;
    let deleting = Boolean(entry.object.meta.deletionTimestamp);
    try {
      // Orphaned, what it owns (the objects its driver made) must outlive it: a deletion with
      // propagationPolicy Orphan has the garbage collector take the owner references off them
      // first (its `orphan` finalizer), where removing ours alone would have them collected.
      if (orphansOnDelete(raw.spec) && !(raw.metadata.finalizers ?? []).includes(ORPHAN_FINALIZER)) {
        if (raw.metadata.resourceVersion !== entry.raw.metadata.resourceVersion) throw new ConflictError(info.kind, id);
        const answer = await this.api.call<unknown>(() => this.custom.deleteNamespacedCustomObject({ ...where, propagationPolicy: 'Orphan' }));
        if (isVersionedRaw(answer)) raw = structuredClone(answer);
        deleting = true;
      }
      raw.metadata.finalizers = (raw.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
      // Without our finalizer an object already being deleted goes; otherwise delete it too.
      last = await this.writes.write(info, entry.object, () => this.custom.replaceNamespacedCustomObject({ ...where, body: raw }));
      if (!deleting) await this.api.call(() => this.custom.deleteNamespacedCustomObject(where));
    } catch (err) {
      if (!(err instanceof NotFoundError || httpCode(err) === 404)) throw err;
    }
    this.claims.removeRaw(info, last);
  }

  private info(kind: string): KindInfo {
    const info = this.kinds.get(kind);
    if (!info) throw new Error(`kind ${kind} is not served by this store`);
    return info;
  }

  private entryOf(object: StoredObject<unknown, unknown>) {
    const info = this.info(object.meta.kind);
    const entry = this.cache.entry(info.kind, `${object.meta.team}/${object.meta.id}`);
    if (!entry) throw new NotFoundError(object.meta.kind, object.meta.id);
    return { info, entry };
  }

  private namespaceOf(team: string): string {
    return namespaceOfTeam(team, this.o.systemNamespace);
  }

  /** Makes a team's namespace on its first write, with the operator's rights there (team-namespaces.ts). */
  private async ensureNamespace(namespace: string): Promise<void> {
    if (!this.watches.namespaces.needsMaking(namespace)) return;
    await this.api.call(() => this.watches.namespaces.make(namespace));
  }
}

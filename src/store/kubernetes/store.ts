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
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  AlreadyExistsError,
  ConflictError,
  NewObject,
  NotFoundError,
  PersistenceState,
  readAs,
  Store,
  StoredObject,
  StoredSecret,
  StoreUnavailableError,
  WatchEvent,
  WatchListener,
} from '../types';
import { SecretTable } from '../secret-table';
import { newId } from '../../lib/ids';
import { nowIso } from '../../lib/time';
import { CollectionWatcher, KubeObject } from './watcher';
import { asCached } from './cached-object';
import { listInPages, ListPage } from './paged-list';
import { ListedKind } from '../list-index';
import { ObjectCache } from '../object-cache';
import { sameJson } from '../../lib/canonical-json';
import { onlyOutboxDiffers } from '../outbox-only';
import { httpCode } from './http-code';
import { messageOf } from '../../lib/unknown-values';
import { NamespacedWatches } from './namespaced-watches';
import { TeamNamespaceBinding, TeamNamespaces } from './team-namespaces';
import { orphansOnDelete } from '../deletion-policy';
import {
  API_VERSION,
  CREATED_AT_ANNOTATION,
  FINALIZER,
  GROUP,
  ID_LABEL,
  namespaceOfTeam,
  objectName,
  PAUSED_ANNOTATION,
  rightfulOwner,
  SECRET_NAME_ANNOTATION,
  secretObjectName,
  STATUS_PENDING_LABEL,
  teamOfNamespace,
  UPDATED_AT_ANNOTATION,
  VERSION,
} from './names';

export interface KindInfo {
  kind: string;
  plural: string;
  idPrefix: string;
}

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

/** What the store reads of a Secret: the typed client's answers (V1Secret) and the watch's JSON both are this. */
interface SecretObject {
  metadata?: { namespace?: string; resourceVersion?: string; annotations?: Record<string, string>; creationTimestamp?: string | Date; managedFields?: unknown };
  data?: Record<string, string>;
}

interface SecretEntry {
  team: string;
  name: string;
  data: Record<string, string>;
  raw: SecretObject;
}

/** The metadata the store reads of a custom resource; timestamps are strings in JSON, Dates from the typed client. */
interface RawMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  /** Dropped as it comes in (cached-object.ts). */
  managedFields?: unknown;
}

/**
 * A custom resource as the API server sends it. The custom objects API is untyped (its
 * answers are `any`), and so are the watch's events: they take this type where they arrive
 * (the `call<Raw>`s, the watcher's), as the CRD's schema has the API server keep to it.
 */
type Raw = KubeObject & { metadata: RawMetadata; spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** The garbage collector's finalizer of a deletion that orphans the dependents. */
const ORPHAN_FINALIZER = 'orphan';

const laterOf = (a: string | undefined, b: string | undefined) => (!a ? b : !b ? a : a > b ? a : b);

export class KubernetesStore implements Store {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly watchClient: Watch;
  private readonly kinds = new Map<string, KindInfo>();
  /** kind -> `team/id` -> the object, and the raw custom resource it came from; changed by settle alone. */
  private readonly cache: ObjectCache<{ object: StoredObject; raw: Raw }>;
  private readonly secrets = new SecretTable<SecretEntry>();
  private readonly listeners = new Set<WatchListener>();
  private readonly watchers: CollectionWatcher<Raw>[] = [];
  /** The team namespaces (made on a first write) and the store's secrets, watched in each. */
  private readonly watches: NamespacedWatches;
  private stopSecrets: (() => void) | null = null;
  /** Set once the secrets of every team namespace known at the start were listed; a namespace made later starts empty. */
  private secretsListed = false;
  /**
   * `kind/team/id` of objects this store is creating: the watch may bring one in before
   * its status (a second write) is there, and until then it is no one's to see.
   */
  private readonly creating = new Set<string>();
  /**
   * kind -> `namespace/name` -> the `team/id` each custom resource claims, and its latest
   * version seen. A manifest copied with its labels makes two claim one id: only the
   * rightful one (rightfulOwner) is cached under it, the other is given an id of its own.
   */
  private readonly claims = new Map<string, Map<string, { key: string; raw: Raw }>>();
  /** kind -> `team/id` -> `namespace/name` of every custom resource claiming it. */
  private readonly claimants = new Map<string, Map<string, Set<string>>>();
  /** `kind/uid` -> the id a copy was judged not to own: it never gets it, not even once the owner is gone. */
  private readonly disowned = new Map<string, string>();
  /** `kind/uid` of copies being given an id of their own. */
  private readonly relabeling = new Set<string>();
  /**
   * Objects and secrets this store removed, with the last resourceVersion seen: a watch
   * event of an earlier version that arrives late must not bring them back. Cleared by a
   * relist, which is authoritative.
   */
  private readonly tombstones = new Map<string, string>();
  /** Set when a request to the API server failed for lack of an answer; cleared by the next success. */
  private unreachableSince: number | null = null;

  // Reads are answered by the cache (set in the constructor), as the embedded store's are.
  readonly get: Store['get'];
  readonly list: Store['list'];
  readonly page: Store['page'];
  readonly named: Store['named'];
  readonly count: Store['count'];

  constructor(private readonly o: KubernetesStoreOptions) {
    this.cache = new ObjectCache(o.listed, (entry) => entry.object);
    ({ get: this.get, list: this.list, page: this.page, named: this.named, count: this.count } = this.cache);
    this.custom = o.kubeConfig.makeApiClient(CustomObjectsApi);
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.watchClient = new Watch(o.kubeConfig);
    const timing = { logger: o.logger, watchSilenceLimitMs: o.watchSilenceLimitMs };
    this.watches =
      o.watches ??
      new NamespacedWatches(new TeamNamespaces({ kubeConfig: o.kubeConfig, systemNamespace: o.systemNamespace, binding: o.teamNamespaceBinding, ...timing }), {
        kubeConfig: o.kubeConfig,
        listPageSize: o.listPageSize,
        ...timing,
      });
    for (const info of o.kinds) {
      this.kinds.set(info.kind, info);
      this.claims.set(info.kind, new Map());
      this.claimants.set(info.kind, new Map());
    }
  }

  // API call: store: custom resources, watched
  async start(): Promise<void> {
    // The team namespaces first: the operator's rights there are in effect before any call into one.
    await this.watches.namespaces.start();
    for (const info of this.kinds.values()) {
      const watcher = new CollectionWatcher<Raw>(
        this.watchClient,
        {
          path: `/apis/${GROUP}/${VERSION}/${info.plural}`,
          list: () =>
            listInPages(this.o.listPageSize, (query) =>
              this.call<ListPage<Raw>>(() => this.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: info.plural, ...query })),
            ),
        },
        {
          replace: (items) => this.replaceKind(info, items),
          upsert: (raw) => this.upsert(info, raw),
          remove: (raw) => this.watchedRemoval(info, raw),
        },
        this.o.logger,
        { silenceLimitMs: this.o.watchSilenceLimitMs },
      );
      this.watchers.push(watcher);
    }
    // The store's secrets are labelled; they are watched in each team namespace (and the system one).
    const secrets = this.watches.follow('secrets', {
      replace: (namespace, items) => {
        this.forgetSecretsOf(namespace);
        for (const item of items) this.upsertSecret(item);
      },
      upsert: (item) => this.upsertSecret(item),
      remove: (item) => {
        // The watch is in order and a deletion is an object's last event: no tombstone needed.
        this.secrets.delete(this.secretKeyOf(item));
        this.tombstones.delete(`Secret/${this.secretKeyOf(item)}`);
      },
      forget: (namespace) => this.forgetSecretsOf(namespace),
    });
    this.stopSecrets = secrets.stop;
    // Each watch's start resolves after its first list: the cache is complete before serving.
    await Promise.all([...this.watchers.map((w) => w.start()), secrets.ready.then(() => (this.secretsListed = true))]);
  }

  async stop(): Promise<void> {
    for (const watcher of this.watchers) watcher.stop();
    this.stopSecrets?.();
    this.watches.stop();
    this.watches.namespaces.stop();
    this.listeners.clear();
  }

  /** Drops what is cached of a namespace's secrets (it was relisted, or it is gone), and their tombstones. */
  private forgetSecretsOf(namespace: string): void {
    const team = teamOfNamespace(namespace, this.o.systemNamespace);
    for (const key of this.secrets.keysOf(team)) this.secrets.delete(key);
    for (const key of [...this.tombstones.keys()]) if (key.startsWith(`Secret/${team}/`)) this.tombstones.delete(key);
  }

  persistence(): PersistenceState {
    if (!this.watchers.every((w) => w.hasSynced()) || !this.secretsListed) return 'unavailable';
    if (this.unreachableSince !== null) return 'stale';
    return this.watchers.every((w) => w.healthy) && this.watches.healthy('secrets') ? 'synced' : 'stale';
  }

  /** Drops every watch and starts new ones (used after the API server came back). */
  rewatch(): void {
    for (const watcher of this.watchers) watcher.restartNow();
    this.watches.restart('secrets');
  }

  // API call: store: custom resources, written
  // API call: store: custom resources' status
  async create<S, St>(input: NewObject<S, St>): Promise<StoredObject<S, St>> {
    const info = this.info(input.meta.kind);
    const namespace = this.namespaceOf(input.meta.team);
    await this.ensureNamespace(namespace);
    const now = nowIso();
    const creatingKey = `${info.kind}/${input.meta.team}/${input.meta.id}`;
    const body = {
      apiVersion: API_VERSION,
      kind: info.kind,
      metadata: {
        name: objectName(input.meta.id),
        namespace,
        // Marked in the same write that creates it: no version of it is ever seen unmarked
        // and status-less, so adoption cannot take it for kubectl's (nothing reads the mark
        // once the status is there; the status write cannot touch metadata anyway).
        labels: { ...(input.meta.labels ?? {}), [STATUS_PENDING_LABEL]: 'true', [ID_LABEL]: input.meta.id },
        annotations: { [CREATED_AT_ANNOTATION]: now, [UPDATED_AT_ANNOTATION]: now },
        finalizers: [FINALIZER],
      },
      spec: input.spec,
    };
    this.creating.add(creatingKey);
    try {
      let created: Raw;
      try {
        created = await this.call<Raw>(() =>
          this.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: info.plural, body }),
        );
      } catch (err) {
        if (httpCode(err) === 409) throw new AlreadyExistsError(info.kind, input.meta.id);
        throw err;
      }
      // The status subresource ignores status on create: it is a second write.
      const withStatus = { ...created, status: kubeStatusOf({ ...input.status, updated_at: now }) };
      try {
        const answer = await this.call<Raw>(() =>
          this.custom.replaceNamespacedCustomObjectStatus({
            group: GROUP,
            version: VERSION,
            namespace,
            plural: info.plural,
            name: created.metadata.name,
            body: withStatus,
          }),
        );
        this.creating.delete(creatingKey);
        return readAs<S, St>(this.upsert(info, answer));
      } catch (err) {
        // The create as a whole failed: take back its first half, so it is not adopted later
        // as if kubectl had made it. Should even that fail, adoption initializes it.
        this.creating.delete(creatingKey);
        if (!(await this.discard(info, created).catch(() => false))) this.upsert(info, created);
        throw err;
      }
    } finally {
      this.creating.delete(creatingKey);
    }
  }

  /** Deletes a custom resource at once, finalizer and all; true when it is gone. */
  // API call: store: custom resources, written
  private async discard(info: KindInfo, created: Raw): Promise<boolean> {
    const where = { group: GROUP, version: VERSION, namespace: created.metadata.namespace!, plural: info.plural, name: created.metadata.name };
    const fresh = await this.call<Raw>(() => this.custom.getNamespacedCustomObject(where));
    fresh.metadata.finalizers = (fresh.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    const answer = await this.call<Raw>(() => this.custom.replaceNamespacedCustomObject({ ...where, body: fresh }));
    await this.call(() => this.custom.deleteNamespacedCustomObject(where)).catch((err) => {
      if (httpCode(err) !== 404) throw err;
    });
    this.removeRaw(info, answer);
    return true;
  }

  // API call: store: custom resources, written
  async update<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    const { info, entry } = this.entryOf(object);
    const raw = structuredClone(entry.raw);
    raw.metadata.resourceVersion = object.meta.resourceVersion;
    raw.metadata.labels = { ...object.meta.labels, [ID_LABEL]: object.meta.id };
    raw.metadata.annotations = { ...(raw.metadata.annotations ?? {}), [UPDATED_AT_ANNOTATION]: nowIso() };
    const answer = await this.replace(info, object, () =>
      this.custom.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: raw.metadata.namespace!,
        plural: info.plural,
        name: raw.metadata.name,
        body: { ...raw, spec: object.spec },
      }),
    );
    return readAs<S, St>(this.upsert(info, answer));
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
    const answer = await this.replace(info, object, () =>
      this.custom.replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace: raw.metadata.namespace!,
        plural: info.plural,
        name: raw.metadata.name,
        body: raw,
      }),
    );
    return readAs<S, St>(this.upsert(info, answer));
  }

  // API call: store: custom resources, written
  async requestDeletion<S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St>> {
    const info = this.info(kind);
    const entry = this.cache.entry(kind, `${team}/${id}`);
    if (!entry) throw new NotFoundError(kind, id);
    if (entry.object.meta.deletionTimestamp) return readAs<S, St>(entry.object);
    const where = { group: GROUP, version: VERSION, namespace: entry.raw.metadata.namespace!, plural: info.plural, name: entry.raw.metadata.name };
    try {
      await this.call(() => this.custom.deleteNamespacedCustomObject(where));
      const fresh = await this.call<Raw>(() => this.custom.getNamespacedCustomObject(where));
      return readAs<S, St>(this.upsert(info, fresh));
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
    const where = { group: GROUP, version: VERSION, namespace: entry.raw.metadata.namespace!, plural: info.plural, name: entry.raw.metadata.name };
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
        const answer = await this.call<Raw | undefined>(() => this.custom.deleteNamespacedCustomObject({ ...where, propagationPolicy: 'Orphan' }));
        if (answer?.metadata?.resourceVersion) raw = structuredClone(answer);
        deleting = true;
      }
      raw.metadata.finalizers = (raw.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
      // Without our finalizer an object already being deleted goes; otherwise delete it too.
      last = await this.replace(info, entry.object, () => this.custom.replaceNamespacedCustomObject({ ...where, body: raw }));
      if (!deleting) await this.call(() => this.custom.deleteNamespacedCustomObject(where));
    } catch (err) {
      if (!(err instanceof NotFoundError || httpCode(err) === 404)) throw err;
    }
    this.removeRaw(info, last);
  }

  watch(listener: WatchListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async getSecret(team: string, name: string): Promise<Record<string, string> | undefined> {
    const entry = this.secrets.get(`${team}/${name}`);
    return entry ? { ...entry.data } : undefined;
  }

  // API call: store and drivers: secrets, written
  async putSecret(team: string, name: string, data: Record<string, string>): Promise<void> {
    const namespace = this.namespaceOf(team);
    await this.ensureNamespace(namespace);
    const existing = this.secrets.get(`${team}/${name}`);
    this.tombstones.delete(`Secret/${team}/${name}`);
    const body = secretBody(name, namespace, data, existing?.raw.metadata?.resourceVersion);
    const write = async (): Promise<SecretObject> =>
      existing
        ? await this.call(() => this.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }))
        : await this.call(() => this.core.createNamespacedSecret({ namespace, body: body }));
    let answer: SecretObject;
    try {
      answer = await write();
    } catch (err) {
      // Another writer got there first (or the cache lagged): write over what is there now.
      if (httpCode(err) !== 409) throw err;
      const current = await this.call(() => this.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
      body.metadata = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
      answer = await this.call(() => this.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }));
    }
    this.upsertSecret(answer);
  }

  // API call: store and drivers: secrets, written
  async addSecret(team: string, name: string, data: Record<string, string>): Promise<Record<string, string>> {
    const cached = await this.getSecret(team, name);
    if (cached) return cached;
    const namespace = this.namespaceOf(team);
    await this.ensureNamespace(namespace);
    const body = secretBody(name, namespace, data);
    let answer: SecretObject;
    try {
      answer = await this.call(() => this.core.createNamespacedSecret({ namespace, body: body }));
    } catch (err) {
      // Another replica made it first: its data wins.
      if (httpCode(err) !== 409) throw err;
      answer = await this.call(() => this.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
    }
    this.tombstones.delete(`Secret/${team}/${name}`);
    this.upsertSecret(answer);
    return decodedData(answer);
  }

  // API call: store and drivers: secrets, written
  async swapSecret(team: string, name: string, expected: Record<string, string>, data: Record<string, string>): Promise<boolean> {
    const namespace = this.namespaceOf(team);
    let current = this.secrets.get(`${team}/${name}`)?.raw;
    for (;;) {
      if (!current || !sameJson(decodedData(current), expected)) return false;
      // The version read is the precondition: a write by anyone since then answers 409.
      const body = secretBody(name, namespace, data, current.metadata?.resourceVersion);
      try {
        const answer = await this.call(() => this.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }));
        this.upsertSecret(answer);
        return true;
      } catch (err) {
        if (httpCode(err) === 404) return this.forgetSecret(team, name, current);
        if (httpCode(err) !== 409) throw err;
      }
      try {
        current = await this.call(() => this.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
      } catch (err) {
        if (httpCode(err) === 404) return this.forgetSecret(team, name, current);
        throw err;
      }
      this.upsertSecret(current);
    }
  }

  /** A secret the API server no longer has leaves the cache at once, not when the watch tells; returns false (nothing written). */
  private forgetSecret(team: string, name: string, lastSeen: SecretObject): false {
    this.secrets.delete(`${team}/${name}`);
    this.tombstones.set(`Secret/${team}/${name}`, lastSeen.metadata?.resourceVersion ?? '0');
    return false;
  }

  // API call: store and drivers: secrets, written
  async deleteSecret(team: string, name: string): Promise<void> {
    const namespace = this.namespaceOf(team);
    let version = this.secrets.get(`${team}/${name}`)?.raw.metadata?.resourceVersion ?? '0';
    try {
      // The API server answers the deleted Secret (typed a Status, whose metadata holds a resourceVersion too).
      const answer = await this.call(() => this.core.deleteNamespacedSecret({ name: secretObjectName(name), namespace }));
      version = laterVersion(version, answer?.metadata?.resourceVersion);
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
    this.secrets.delete(`${team}/${name}`);
    this.tombstones.set(`Secret/${team}/${name}`, version);
  }

  async listSecrets(prefix: string): Promise<StoredSecret[]> {
    return [...this.secrets.withPrefix(prefix)].map((s) => ({
      team: s.team,
      name: s.name,
      data: { ...s.data },
      createdAt: isoOf(s.raw.metadata?.creationTimestamp),
    }));
  }

  // --- cache -----------------------------------------------------------------------

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

  /** The id of a custom resource: its label, or one derived from a name like `lb-x7k2...`. */
  private idOf(info: KindInfo, raw: Raw): string | null {
    const label = raw.metadata.labels?.[ID_LABEL];
    if (label) return label;
    const m = new RegExp(`^${info.idPrefix}-([0-9a-z]{16,26})$`).exec(raw.metadata.name);
    return m ? `${info.idPrefix}_${m[1]}` : null;
  }

  private toStored(info: KindInfo, raw: Raw, id: string): StoredObject {
    const md = raw.metadata;
    const iso = (value: string | Date | undefined) => (value === undefined ? undefined : new Date(value).toISOString());
    const createdAt = md.annotations?.[CREATED_AT_ANNOTATION] ?? iso(md.creationTimestamp) ?? nowIso();
    const { updated_at: statusUpdatedAt, ...status } = recordStatusOf(raw.status);
    const statusUpdated = typeof statusUpdatedAt === 'string' ? statusUpdatedAt : undefined;
    const updatedAt = laterOf(laterOf(md.annotations?.[UPDATED_AT_ANNOTATION], statusUpdated), createdAt)!;
    const labels = { ...(md.labels ?? {}) };
    delete labels[ID_LABEL];
    return {
      meta: {
        kind: info.kind,
        id,
        team: teamOfNamespace(md.namespace ?? '', this.o.systemNamespace),
        resourceVersion: md.resourceVersion ?? '',
        generation: md.generation ?? 1,
        createdAt,
        updatedAt,
        ...(md.deletionTimestamp ? { deletionTimestamp: iso(md.deletionTimestamp) } : {}),
        labels,
        ...(md.uid ? { object: { name: raw.metadata.name, uid: md.uid } } : {}),
        ...(md.annotations?.[PAUSED_ANNOTATION] === 'true' ? { paused: true } : {}),
      },
      spec: raw.spec ?? {},
      status: status,
    };
  }

  /** Takes an object from the API server into the cache, unless the cache holds a newer one. */
  private upsert(info: KindInfo, raw: Raw): StoredObject {
    asCached(raw);
    const id = this.idOf(info, raw);
    if (id && leaving(raw)) {
      this.removeRaw(info, raw);
      return this.toStored(info, raw, id);
    }
    if (!id) {
      for (const key of this.claim(info, raw, null) ?? []) this.settle(info, key);
      void this.assignId(info, raw);
      return this.toStored(info, raw, `${info.idPrefix}_unassigned`);
    }
    const object = this.toStored(info, raw, id);
    const key = `${object.meta.team}/${id}`;
    if (this.creating.has(`${info.kind}/${key}`)) return object;
    const removedAt = this.tombstones.get(`${info.kind}/${key}`);
    if (removedAt !== undefined && !isOlder(removedAt, object.meta.resourceVersion)) return object;
    for (const changed of this.claim(info, raw, key) ?? []) this.settle(info, changed);
    const entry = this.cache.entry(info.kind, key);
    return entry && sameResource(entry.raw, raw) ? entry.object : object;
  }

  /**
   * Records the id a custom resource claims (none: null). Answers the `team/id`s whose
   * claimants changed, to be settled, or null for a version older than one already seen.
   */
  private claim(info: KindInfo, raw: Raw, key: string | null): string[] | null {
    const name = nameKeyOf(raw);
    const prior = this.claims.get(info.kind)!.get(name);
    if (prior && isOlder(raw.metadata.resourceVersion ?? '', prior.raw.metadata.resourceVersion ?? '')) return null;
    const changed = key ? [key] : [];
    if (prior && prior.key !== key) {
      this.unclaim(info, name);
      changed.push(prior.key);
    }
    if (key) {
      this.claims.get(info.kind)!.set(name, { key, raw });
      const byKey = this.claimants.get(info.kind)!;
      if (!byKey.has(key)) byKey.set(key, new Set());
      byKey.get(key)!.add(name);
    }
    return changed;
  }

  private unclaim(info: KindInfo, name: string): void {
    const prior = this.claims.get(info.kind)!.get(name);
    if (!prior) return;
    this.claims.get(info.kind)!.delete(name);
    const names = this.claimants.get(info.kind)!.get(prior.key);
    names?.delete(name);
    if (names?.size === 0) this.claimants.get(info.kind)!.delete(prior.key);
    this.disowned.delete(uidKeyOf(info, prior.raw));
  }

  /**
   * Caches under an id the custom resource it belongs to, of all that claim it, and sets
   * the others to get ids of their own: a copy is never served under its original's id.
   */
  private settle(info: KindInfo, key: string): void {
    const id = key.slice(key.indexOf('/') + 1);
    const claims = this.claims.get(info.kind)!;
    const rivals = [...(this.claimants.get(info.kind)!.get(key) ?? [])].map((name) => claims.get(name)!.raw);
    const owner = rightfulOwner(
      id,
      rivals.filter((raw) => this.disowned.get(uidKeyOf(info, raw)) !== id),
    );
    for (const raw of rivals) if (raw !== owner) this.disown(info, raw, id);
    const previous = this.cache.entry(info.kind, key);
    const same = previous !== undefined && owner !== undefined && sameResource(previous.raw, owner);
    if (same && !isNewer(owner.metadata.resourceVersion ?? '', previous.object.meta.resourceVersion)) return;
    if (previous && !same) {
      this.cache.delete(info.kind, key);
      this.notify({ type: 'deleted', object: previous.object, previous: previous.object });
    }
    if (!owner) return;
    const object = this.toStored(info, owner, id);
    this.cache.set(info.kind, key, { object, raw: owner });
    this.notify({ type: same ? 'modified' : 'added', object, previous: same ? previous.object : undefined });
  }

  /** `team/id` of the id a custom resource carries, or null without one. */
  private labelKeyOf(info: KindInfo, raw: Raw): string | null {
    const id = this.idOf(info, raw);
    return id ? `${teamOfNamespace(raw.metadata.namespace ?? '', this.o.systemNamespace)}/${id}` : null;
  }

  /** The `team/id` a custom resource is known under: the one it claimed, else its label's. */
  private knownKeyOf(info: KindInfo, raw: Raw): string | null {
    return this.claims.get(info.kind)!.get(nameKeyOf(raw))?.key ?? this.labelKeyOf(info, raw);
  }

  private removeRaw(info: KindInfo, raw: Raw): void {
    const name = nameKeyOf(raw);
    const claim = this.claims.get(info.kind)!.get(name);
    const key = this.knownKeyOf(info, raw);
    if (claim && sameResource(claim.raw, raw)) this.unclaim(info, name);
    if (!key) return;
    const previous = this.cache.entry(info.kind, key);
    // A copy that never had the id leaves the id's owner and its tombstone alone.
    if (!previous || sameResource(previous.raw, raw)) this.bury(info, key, raw.metadata.resourceVersion);
    this.settle(info, key);
  }

  /** Marks `team/id` removed as of a version: a late event of an earlier one must not bring it back. */
  private bury(info: KindInfo, key: string, version: string | undefined): void {
    const tombstone = `${info.kind}/${key}`;
    const cached = this.cache.entry(info.kind, key)?.object.meta.resourceVersion;
    this.tombstones.set(tombstone, laterVersion(laterVersion(this.tombstones.get(tombstone) ?? '0', cached), version));
  }

  /** A deletion the watch reports is the object's last event: nothing older can follow it. */
  private watchedRemoval(info: KindInfo, raw: Raw): void {
    const key = this.knownKeyOf(info, raw);
    const cached = key ? this.cache.entry(info.kind, key) : undefined;
    const served = !cached || sameResource(cached.raw, raw);
    this.removeRaw(info, raw);
    if (key && served) this.tombstones.delete(`${info.kind}/${key}`);
  }

  /**
   * After a relist: everything listed is current; whatever is cached but not listed is
   * gone. Every claim is recorded before any owner is chosen, so a copy listed before its
   * original is not served under its id even for a moment.
   */
  private replaceKind(info: KindInfo, items: Raw[]): void {
    for (const key of [...this.tombstones.keys()]) if (key.startsWith(`${info.kind}/`)) this.tombstones.delete(key);
    const claims = this.claims.get(info.kind)!;
    const changed = new Set<string>(this.cache.keys(info.kind));
    const listed = new Set<string>();
    for (const raw of items) {
      asCached(raw);
      if (leaving(raw)) continue;
      listed.add(nameKeyOf(raw));
      const key = this.labelKeyOf(info, raw);
      if (!key) void this.assignId(info, raw);
      if (key && this.creating.has(`${info.kind}/${key}`)) continue;
      for (const k of this.claim(info, raw, key) ?? []) changed.add(k);
    }
    for (const [name, claim] of [...claims]) {
      if (listed.has(name)) continue;
      const cached = this.cache.entry(info.kind, claim.key);
      if (cached && sameResource(cached.raw, claim.raw)) this.bury(info, claim.key, claim.raw.metadata.resourceVersion);
      this.unclaim(info, name);
      changed.add(claim.key);
    }
    for (const key of changed) this.settle(info, key);
  }

  /**
   * A custom resource that carries an id another owns (a manifest copied with its labels)
   * is made a kubectl-made object of its own. Being deleted, it only loses the finalizer it
   * copied: nothing was provisioned for it, and no reconciler would ever remove it.
   */
  private disown(info: KindInfo, raw: Raw, id: string): void {
    const uidKey = uidKeyOf(info, raw);
    this.disowned.set(uidKey, id);
    if (this.relabeling.has(uidKey)) return;
    this.relabeling.add(uidKey);
    void this.relabel(info, raw).finally(() => {
      this.relabeling.delete(uidKey);
      // A version that came in while this ran was passed over: try again on it.
      const latest = this.claims.get(info.kind)!.get(nameKeyOf(raw));
      if (latest && this.disowned.get(uidKey) === id && sameResource(latest.raw, raw) && latest.raw.metadata.resourceVersion !== raw.metadata.resourceVersion) {
        this.disown(info, latest.raw, id);
      }
    });
  }

  /**
   * Gives a copy a new id, as assignId does a kubectl-made object without one, and drops
   * what it copied of its original's history so that adoption takes it in at once as new:
   * the status-pending mark (it would wait for a status write that is not coming), the
   * created-at and updated-at stamps (its own creationTimestamp is when it was made), and
   * a status, should one have been written to it (first, by itself: the status subresource
   * takes no metadata). Each write has the version read as precondition: of replicas doing
   * it at once one succeeds, the others' 409 is dropped and the watch brings the result.
   */
  // API call: store: custom resources, written
  // API call: store: custom resources' status
  private async relabel(info: KindInfo, raw: Raw): Promise<void> {
    const where = { group: GROUP, version: VERSION, namespace: raw.metadata.namespace!, plural: info.plural, name: raw.metadata.name };
    const from = idLabelOf(raw);
    try {
      if (raw.metadata.deletionTimestamp) {
        const finalizers = raw.metadata.finalizers ?? [];
        if (!finalizers.includes(FINALIZER)) return;
        const body = structuredClone(raw);
        body.metadata.finalizers = finalizers.filter((f) => f !== FINALIZER);
        await this.custom.replaceNamespacedCustomObject({ ...where, body });
        return;
      }
      let current = raw;
      if (raw.status && Object.keys(raw.status).length > 0) {
        const { status: _copied, ...statusless } = structuredClone(raw);
        current = await this.custom.replaceNamespacedCustomObjectStatus({ ...where, body: statusless });
      }
      const body = asOwnObject(current, newId(info.idPrefix));
      await this.custom.replaceNamespacedCustomObject({ ...where, body });
      this.o.logger.info(
        { kind: info.kind, namespace: where.namespace, name: where.name, copiedId: from, id: idLabelOf(body) },
        "gave a custom resource carrying another's id one of its own",
      );
    } catch (err) {
      if (httpCode(err) !== 409 && httpCode(err) !== 404)
        this.o.logger.warn({ kind: info.kind, name: raw.metadata.name, err: messageOf(err) }, 'could not give a copied custom resource an id of its own');
    }
  }

  /**
   * A custom resource made with kubectl under a name that is no id gets one, kept in a
   * label; the watch then brings it in. Several replicas racing are settled by the
   * resourceVersion precondition. (A status-pending mark or creation stamp on it was
   * copied: the store puts them only on what it creates, with the id label.)
   */
  // API call: store: custom resources, written
  private async assignId(info: KindInfo, raw: Raw): Promise<void> {
    if (raw.metadata.deletionTimestamp) return;
    const body = asOwnObject(raw, newId(info.idPrefix));
    try {
      await this.custom.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: raw.metadata.namespace!,
        plural: info.plural,
        name: raw.metadata.name,
        body,
      });
    } catch (err) {
      if (httpCode(err) !== 409 && httpCode(err) !== 404)
        this.o.logger.warn({ kind: info.kind, name: raw.metadata.name, err: messageOf(err) }, 'could not assign an id');
    }
  }

  private upsertSecret(raw: SecretObject): void {
    asCached(raw);
    const md = raw.metadata ?? {};
    const name = md.annotations?.[SECRET_NAME_ANNOTATION];
    if (!name) return;
    const data = decodedData(raw);
    const team = teamOfNamespace(md.namespace ?? '', this.o.systemNamespace);
    const version = md.resourceVersion ?? '';
    // A late watch event must not undo a write this store already saw answered, nor bring back a deleted secret.
    const current = this.secrets.get(`${team}/${name}`);
    if (current && !isNewer(version, current.raw.metadata?.resourceVersion ?? '')) return;
    const removedAt = this.tombstones.get(`Secret/${team}/${name}`);
    if (removedAt !== undefined && !isOlder(removedAt, version)) return;
    this.secrets.set(`${team}/${name}`, { team, name, data, raw });
  }

  private secretKeyOf(raw: SecretObject): string {
    const md = raw.metadata ?? {};
    return `${teamOfNamespace(md.namespace ?? '', this.o.systemNamespace)}/${md.annotations?.[SECRET_NAME_ANNOTATION] ?? ''}`;
  }

  private notify(event: WatchEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not undo or hide a committed write.
      }
    }
  }

  // --- API server ------------------------------------------------------------------

  /** Makes a team's namespace on its first write, with the operator's rights there (team-namespaces.ts). */
  private async ensureNamespace(namespace: string): Promise<void> {
    if (!this.watches.namespaces.needsMaking(namespace)) return;
    await this.call(() => this.watches.namespaces.make(namespace));
  }

  /**
   * A replace with a resourceVersion precondition; a 409 refreshes the cache so the
   * caller's retry reads the latest. No re-read when the cache already holds a later
   * version than the one written against: the write that won is most often this
   * process's own (the reconciler's and the outbox relay's race), its answer is cached.
   */
  private async replace(info: KindInfo, object: StoredObject<unknown, unknown>, request: () => Promise<Raw>): Promise<Raw> {
    try {
      return await this.call(request);
    } catch (err) {
      const code = httpCode(err);
      if (code === 409) {
        const cached = this.cache.entry(info.kind, `${object.meta.team}/${object.meta.id}`)?.object.meta.resourceVersion;
        if (!cached || !isNewer(cached, object.meta.resourceVersion)) await this.refresh(info, object).catch(() => undefined);
        throw new ConflictError(info.kind, object.meta.id);
      }
      if (code === 404) throw new NotFoundError(info.kind, object.meta.id);
      throw err;
    }
  }

  // API call: store: custom resources, written
  private async refresh(info: KindInfo, object: StoredObject<unknown, unknown>): Promise<void> {
    const entry = this.cache.entry(info.kind, `${object.meta.team}/${object.meta.id}`);
    if (!entry) return;
    const fresh = await this.call<Raw>(() =>
      this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: entry.raw.metadata.namespace!,
        plural: info.plural,
        name: entry.raw.metadata.name,
      }),
    );
    this.upsert(info, fresh);
  }

  /** Runs a request, telling an API server that does not answer (503) from one that says no. */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      const answer = await request();
      if (this.unreachableSince !== null) {
        this.unreachableSince = null;
        this.rewatch();
      }
      return answer;
    } catch (err) {
      const code = httpCode(err);
      if (code === undefined || code >= 500) {
        this.unreachableSince ??= Date.now();
        throw new StoreUnavailableError(err);
      }
      this.unreachableSince = null;
      throw err;
    }
  }
}

const idLabelOf = (raw: Raw) => raw.metadata.labels?.[ID_LABEL];

/**
 * A custom resource as a kubectl-made one with the id given: without what the store puts
 * on the ones it creates, which on this one can only have been copied (the status-pending
 * mark would hold its adoption back; its own creationTimestamp says when it was made).
 */
function asOwnObject(raw: Raw, id: string): Raw {
  const body = structuredClone(raw);
  const labels: Record<string, string> = { ...(body.metadata.labels ?? {}), [ID_LABEL]: id };
  delete labels[STATUS_PENDING_LABEL];
  const annotations = { ...(body.metadata.annotations ?? {}) };
  delete annotations[CREATED_AT_ANNOTATION];
  delete annotations[UPDATED_AT_ANNOTATION];
  body.metadata.labels = labels;
  body.metadata.annotations = annotations;
  body.metadata.finalizers = [...new Set([...(body.metadata.finalizers ?? []), FINALIZER])];
  return body;
}

/**
 * Being deleted without our finalizer: released by this store, kept only by another's
 * finalizer (the garbage collector's `orphan`, while it orphans what the resource owned).
 * It is gone for the store, as it will be for the API server.
 */
const leaving = (raw: Raw) => Boolean(raw.metadata.deletionTimestamp) && !(raw.metadata.finalizers ?? []).includes(FINALIZER);

const nameKeyOf = (raw: KubeObject) => `${raw.metadata.namespace ?? ''}/${raw.metadata.name}`;
const uidKeyOf = (info: KindInfo, raw: Raw) => `${info.kind}/${raw.metadata.uid ?? nameKeyOf(raw)}`;

/** Two versions of one custom resource (not one deleted and made again under its name). */
function sameResource(a: KubeObject, b: KubeObject): boolean {
  const [ua, ub] = [a.metadata.uid, b.metadata.uid];
  return ua && ub ? ua === ub : nameKeyOf(a) === nameKeyOf(b);
}

/** Kubernetes resourceVersions are etcd revisions in practice; compare them as numbers when they are. */
function isOlder(candidate: string, current: string): boolean {
  if (!/^\d+$/.test(candidate) || !/^\d+$/.test(current)) return false;
  return BigInt(candidate) < BigInt(current);
}

/** Whether `candidate` is a later version than `current`; when they do not compare, take the candidate. */
function isNewer(candidate: string, current: string): boolean {
  if (!/^\d+$/.test(candidate) || !/^\d+$/.test(current)) return candidate !== current;
  return BigInt(candidate) > BigInt(current);
}

/** The later of two resourceVersions (the first when they do not compare). */
function laterVersion(a: string, b: string | undefined): string {
  return b && isOlder(a, b) ? b : a;
}

/**
 * The status as the custom resource carries it: the record's snake_case status, except the
 * fields Kubernetes tools read by their conventional names (kstatus, Flux and Argo CD read
 * `status.observedGeneration`; conditions are in metav1.Condition form already).
 */
function kubeStatusOf(status: Record<string, unknown>): Record<string, unknown> {
  const { observed_generation: observedGeneration, ...rest } = status;
  return observedGeneration === undefined ? rest : { ...rest, observedGeneration };
}

/** The record's status from a custom resource's; one written before observedGeneration (snake_case) reads the same. */
function recordStatusOf(status: Record<string, unknown> | undefined): Record<string, unknown> {
  const { observedGeneration, observed_generation: legacy, ...rest } = status ?? {};
  const generation = observedGeneration ?? legacy;
  return generation === undefined ? rest : { ...rest, observed_generation: generation };
}

/** A Secret object holding one store secret; its store name rides in an annotation. */
function secretBody(name: string, namespace: string, data: Record<string, string>, resourceVersion?: string) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: secretObjectName(name),
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'cloudplane' },
      annotations: { [SECRET_NAME_ANNOTATION]: name },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    stringData: data,
  };
}

/** A metadata timestamp as ISO 8601: a string from a watch, a Date from the client's typed answers (never absent: it throws then). */
function isoOf(timestamp: string | Date | undefined): string {
  return new Date(timestamp ?? Number.NaN).toISOString();
}

function decodedData(raw: SecretObject): Record<string, string> {
  const encoded = raw.data ?? {};
  return Object.fromEntries(Object.entries(encoded).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

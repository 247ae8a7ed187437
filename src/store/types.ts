/**
 * The store of record. Two backends implement it: embedded (a data directory) and
 * Kubernetes (custom resources). Controllers and the API are written against this
 * interface only, and rely on Kubernetes semantics: resourceVersion preconditions,
 * generation bumped by spec changes only, status written separately, and a watch.
 */
import { messageOf } from '../lib/unknown-values';

export interface ObjectMeta {
  /** Family kind, e.g. `LoadBalancer`. */
  kind: string;
  /** Public id, e.g. `lb_x7k2...`. */
  id: string;
  /** Owning team id; a namespace in Kubernetes. */
  team: string;
  /** Opaque version of this object; changes on every write. */
  resourceVersion: string;
  /** Incremented on every change of the spec (not the status). */
  generation: number;
  createdAt: string;
  updatedAt: string;
  /** Set once deletion was asked for (like Kubernetes' deletionTimestamp); the object stays until removed. */
  deletionTimestamp?: string;
  labels: Record<string, string>;
  /** Cluster mode: the custom resource's own name and uid, which owner references of what drivers make need. */
  object?: { name: string; uid: string };
  /** Cluster mode: the custom resource carries `cloudplane.dev/paused: "true"`; its reconciliation waits. */
  paused?: boolean;
  /**
   * When someone last asked for a reconcile pass now (POST /{path}/{id}/reconcile, or the
   * annotation `cloudplane.dev/reconcile-requested-at` in cluster mode): an opaque token,
   * an ISO time from the API. A change of it queues a pass; the status records the token
   * handled (`last_handled_reconcile_at`). Written by `update`, like labels.
   */
  reconcileRequestedAt?: string;
  /**
   * Cluster mode: the status is the first one the create carried sealed in annotations,
   * not yet written to the status subresource (store/kubernetes/first-status.ts).
   */
  statusUnwritten?: boolean;
}

export interface StoredObject<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  meta: ObjectMeta;
  spec: Spec;
  status: Status;
}

/**
 * A stored object as the spec and status types its caller names (Store.get<Spec, Status>).
 * The store keeps every kind as plain JSON, which the kind's schema checked on the way in;
 * it cannot tell a kind's types itself, so this is the one place it takes them on trust.
 */
export function readAs<S, St>(object: StoredObject): StoredObject<S, St> {
  return object as StoredObject<S, St>;
}

export interface NewObject<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  meta: Pick<ObjectMeta, 'kind' | 'id' | 'team'> & { labels?: Record<string, string> };
  spec: Spec;
  status: Status;
}

/** How a page of a listed kind is asked for and what it holds (Store.page; list-index.ts serves it). */
export type ListSort = 'created_at' | 'name';
export type ListOrder = 'asc' | 'desc';

export interface PageRequest {
  sort: ListSort;
  order: ListOrder;
  /** Only this state; without it, every state but the hidden ones. */
  status?: string;
  /** Only objects whose spec fields (filterFields) have these values. */
  where?: Record<string, string>;
  /** Only objects created at or after `from` and before `before` (ISO 8601, as createdAt). */
  created?: { from?: string; before?: string };
  /** Position after which the page starts: the sort value and id of the previous page's last item. */
  after?: Position;
  limit: number;
}

export interface Position {
  value: string;
  id: string;
}

export interface Page<T = StoredObject> {
  items: T[];
  /** The position of the last item when more follow, else null. */
  next: Position | null;
}

export type WatchEventType = 'added' | 'modified' | 'deleted';

export interface WatchEvent {
  type: WatchEventType;
  object: StoredObject;
  /** The object before this change; absent for `added`. */
  previous?: StoredObject;
}

export type WatchListener = (event: WatchEvent) => void;

/** `synced`: answered by the store of record; `stale`: from a cache; `unavailable`: neither. */
export type PersistenceState = 'synced' | 'stale' | 'unavailable';

export interface Store {
  start(): Promise<void>;
  stop(): Promise<void>;
  get<S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St> | undefined>;
  /**
   * `get` without a turn of the event loop: both stores answer every read from the objects
   * they hold in memory (object-cache.ts), so a read on every request (an API key, the
   * resource asked for) need not wait for a promise.
   */
  peek<S, St>(kind: string, team: string, id: string): StoredObject<S, St> | undefined;
  /** Every object of a kind, of one team or of all teams. */
  list<S, St>(kind: string, team?: string): Promise<StoredObject<S, St>[]>;
  /**
   * The `team/id` of every object of a kind, without the objects: a walk of a whole kind
   * (a reconciler's resync) that reads each object later, one at a time. The embedded
   * store parses an object it does not keep parsed when read, so a list of 100,000 of them
   * at once would be 100,000 objects made at once.
   */
  keys(kind: string): Promise<string[]>;
  /**
   * One page of a listed kind's objects of a team (list-index.ts): a seek to `after` and a
   * walk of `limit` entries of an ordered index, whatever the team's size. `team` is
   * undefined for a kind listed across teams.
   */
  page(kind: string, team: string | undefined, request: PageRequest): Promise<Page>;
  /** A listed kind's objects of a team named `name` (its family's nameOf), in any listed state. */
  named(kind: string, team: string, name: string): Promise<StoredObject[]>;
  /** How many of a listed kind's objects of a team its `counted` rule counts (a quota). */
  count(kind: string, team: string): Promise<number>;
  /** Fails with AlreadyExistsError if the id is taken. */
  create<S, St>(object: NewObject<S, St>): Promise<StoredObject<S, St>>;
  /** Writes spec and labels; fails with ConflictError unless `meta.resourceVersion` is current. */
  update<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>>;
  /** Writes status only; fails with ConflictError unless `meta.resourceVersion` is current. */
  updateStatus<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>>;
  /** Asks for deletion: sets `meta.deletionTimestamp` once; reconcilers finish the job and remove(). */
  requestDeletion<S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St>>;
  /** Removes the object for good; with a resourceVersion, only if it is current. */
  remove(kind: string, team: string, id: string, resourceVersion?: string): Promise<void>;
  /** Every change of every kind after the call, in commit order. Returns an unsubscribe. */
  watch(listener: WatchListener): () => void;
  persistence(): PersistenceState;

  /** Secrets (keys, key hashes, signing secrets): sealed at rest, Secrets in Kubernetes. */
  readonly secrets: NamedEntries;
  /**
   * Records that are not secret (usage counts, listener leases, sessions, the bootstrap
   * claim): kept as they are, ConfigMaps in Kubernetes. Which names are which is each
   * owner's RecordKind (record-kinds.ts).
   */
  readonly records: NamedEntries;
}

/** Small maps of strings kept by name per team beside the resources, never in one. */
export interface NamedEntries {
  get(team: string, name: string): Promise<Record<string, string> | undefined>;
  put(team: string, name: string, data: Record<string, string>): Promise<void>;
  /**
   * Writes the entry unless it exists; returns what is stored, the first writer's data
   * when several race (replicas starting at once must agree on one key).
   */
  add(team: string, name: string, data: Record<string, string>): Promise<Record<string, string>>;
  /**
   * Writes `data` only if the entry still holds `expected` (compared by value), and says
   * whether it did: a read-modify-write that other writers may race (a rotation, a lease
   * renewal, the dropping of an expired previous secret) loses no one's write.
   */
  swap(team: string, name: string, expected: Record<string, string>, data: Record<string, string>): Promise<boolean>;
  delete(team: string, name: string): Promise<void>;
  /** Entries whose names start with `prefix`, across all teams. */
  list(prefix: string): Promise<StoredEntry[]>;
}

export interface StoredEntry {
  team: string;
  name: string;
  data: Record<string, string>;
  /** When the entry was first written (ISO 8601); a later put keeps it. */
  createdAt: string;
}

export class ConflictError extends Error {
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} ${id} was modified concurrently`);
    this.name = 'ConflictError';
  }
}

export class NotFoundError extends Error {
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} ${id} does not exist`);
    this.name = 'NotFoundError';
  }
}

export class AlreadyExistsError extends Error {
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} ${id} already exists`);
    this.name = 'AlreadyExistsError';
  }
}

/** The store of record could not be reached; the write did not happen. `cause`: what was thrown, an Error most often. */
export class StoreUnavailableError extends Error {
  constructor(cause?: unknown) {
    super(`store unavailable${cause ? `: ${String(messageOf(cause))}` : ''}`);
    this.name = 'StoreUnavailableError';
  }
}

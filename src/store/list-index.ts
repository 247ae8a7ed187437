/**
 * Ordered indexes of the objects lists serve, so that a page costs a seek and a walk of
 * the page (O(log N + page)) instead of a scan and a sort of the whole collection.
 *
 * Per kind and team (or across teams, for a kind listed so), and for each sort the API
 * offers (`created_at` and `name`, id as the tie-break), one B+ tree per view:
 * - `default`: every listed object whose state is not hidden by default;
 * - one per state (the `status` filter);
 * - one per value of each spec field the kind lists by equality (`where`).
 * Both directions walk the same tree, forwards or backwards. The trees hold keys alone
 * (sorted-btree then shares one array for every leaf's values); each object's current
 * version is held once per bucket, by id, as the store keeps it (`E`: the object itself,
 * or what the store makes it from, read through `objectOf`), and a page reads its objects
 * there. So a write
 * that keeps an object's sort keys and views (most status writes) changes no tree at all,
 * and one that changes its state changes its old and new state's trees only. Counts for
 * quotas are kept beside. An object is listed once it has a state (`stateOf`); before
 * that, and once destroyed, no list shows it. The stores call `replace` at the single
 * place where their memory changes, synchronously, so the very next page reads the write.
 */
import BTree from 'sorted-btree';
import type { ListSort, Page, PageRequest, StoredObject } from './types';
import { known } from '../lib/known';

/** What a store must know of a kind to index it; from its family (resources/store-of-record.ts listedKindOf). */
export interface ListedKind {
  kind: string;
  /** The name lists sort by and unique names are checked on. */
  nameOf(spec: object): string;
  /** The state lists show and filter on; undefined: not listed. Default: status.status, unless `destroyed`. */
  stateOf?: (object: StoredObject) => string | undefined;
  /** States a list leaves out unless asked for by `status`. */
  hiddenStates: readonly string[];
  /** Spec fields lists filter on by equality. */
  filterFields: readonly string[];
  /** Listed across teams (teams themselves), not per team. */
  acrossTeams?: boolean;
  /** Objects that `count` counts (a quota's rule). */
  counted?(object: StoredObject): boolean;
}

type Key = readonly [value: string, id: string];
/** A sorted set of keys: the object of a key is its bucket's (Bucket.objects). */
type Tree = BTree<Key, undefined>;

const compareKeys = (a: Key, b: Key): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
const newTree = (): Tree => new BTree<Key, undefined>(undefined, compareKeys);

/** One sort's trees of a bucket. */
class SortedViews {
  /** Every listed object; kept for the name sort only (named), to spare memory. */
  readonly visible = newTree();
  readonly shown = newTree();
  readonly byState = new Map<string, Tree>();
  /** `field` -> value -> tree. */
  readonly byField = new Map<string, Map<string, Tree>>();
}

/** Where an object sits in the indexes; computed once per version. */
interface Placement {
  bucket: string;
  id: string;
  state: string;
  hidden: boolean;
  keys: Record<ListSort, Key>;
  fields: Array<[string, string]>;
  counted: boolean;
}

class Bucket<E> {
  readonly sorts: Record<ListSort, SortedViews> = { created_at: new SortedViews(), name: new SortedViews() };
  /** The current version of every listed object of the bucket, by id, as the store keeps it. */
  readonly objects = new Map<string, E>();
  counted = 0;
}

const SORTS: ListSort[] = ['created_at', 'name'];

const defaultStateOf = (object: StoredObject): string | undefined => {
  const state = object.status.status;
  return typeof state === 'string' && state !== 'destroyed' ? state : undefined;
};

// Shared by the requests without a filter or a window: a page allocates only what it must.
const NO_FILTERS: ReadonlyArray<[string, string]> = Object.freeze([]);
const NO_WINDOW: Readonly<{ from?: string; before?: string }> = Object.freeze({});
const whereOf = (request: PageRequest): ReadonlyArray<[string, string]> => (request.where ? Object.entries(request.where) : NO_FILTERS);

/** The trees of one sort that hold an object at `placement`; those missing are made when `create`, else left out. */
function treesOf(views: SortedViews, placement: Placement, sort: ListSort, create: boolean): Tree[] {
  const trees: Tree[] = [];
  const byState = treeIn(views.byState, placement.state, create);
  if (byState) trees.push(byState);
  if (sort === 'name') trees.push(views.visible);
  if (!placement.hidden) trees.push(views.shown);
  for (const [field, value] of placement.fields) {
    let values = views.byField.get(field);
    if (!values) {
      if (!create) continue;
      views.byField.set(field, (values = new Map<string, Tree>()));
    }
    const tree = treeIn(values, value, create);
    if (tree) trees.push(tree);
  }
  return trees;
}

/** Forgets the state's and the fields' trees of `placement` that an object's leaving emptied. */
function dropEmptyTrees(views: SortedViews, placement: Placement): void {
  if (views.byState.get(placement.state)?.size === 0) views.byState.delete(placement.state);
  for (const [field, value] of placement.fields) {
    const values = views.byField.get(field);
    if (values?.get(value)?.size === 0) values.delete(value);
  }
}

/** Tree of `map` under `key`, made when `create`. */
function treeIn(map: Map<string, Tree>, key: string, create: boolean): Tree | undefined {
  let tree = map.get(key);
  if (!tree && create) map.set(key, (tree = newTree()));
  return tree;
}

/** Indexes of one kind; `E` is what the store keeps of an object, `objectOf` reads the object from it. */
export class KindIndex<E> {
  private readonly buckets = new Map<string, Bucket<E>>();

  constructor(
    readonly listed: ListedKind,
    private readonly objectOf: (entry: E) => StoredObject,
  ) {}

  private bucketKey(team: string | undefined): string {
    if (this.listed.acrossTeams) return '';
    if (team === undefined) throw new Error(`${this.listed.kind} is listed per team`);
    return team;
  }

  private placementOf(object: StoredObject): Placement | undefined {
    const state = (this.listed.stateOf ?? defaultStateOf)(object);
    if (state === undefined) return undefined;
    const spec = object.spec;
    const id = object.meta.id;
    const name = this.listed.nameOf(spec);
    const fields: Array<[string, string]> = [];
    for (const field of this.listed.filterFields) {
      const value = spec[field];
      if (typeof value === 'string') fields.push([field, value]);
    }
    return {
      bucket: this.listed.acrossTeams ? '' : object.meta.team,
      id,
      state,
      hidden: this.listed.hiddenStates.includes(state),
      keys: { created_at: [object.meta.createdAt, id], name: [typeof name === 'string' ? name : '', id] },
      fields,
      counted: this.listed.counted?.(object) ?? false,
    };
  }

  /** Takes a change of one object in: `previous` leaves, `next` enters (either may be absent). */
  replace(previous: E | undefined, next: E | undefined): void {
    const before = previous && this.placementOf(this.objectOf(previous));
    const after = next && this.placementOf(this.objectOf(next));
    if (before && after && before.bucket === after.bucket) {
      this.move(before, after, next);
      return;
    }
    if (before) this.place(before, undefined);
    if (after) this.place(after, next);
  }

  /** Puts `object` at `placement`, or takes what is there away when `object` is undefined. */
  private place(placement: Placement, object: E | undefined): void {
    let bucket = this.buckets.get(placement.bucket);
    if (!bucket) {
      if (!object) return;
      this.buckets.set(placement.bucket, (bucket = new Bucket()));
    }
    const adding = object !== undefined;
    for (const sort of SORTS) {
      const views = bucket.sorts[sort];
      const key = placement.keys[sort];
      for (const tree of treesOf(views, placement, sort, adding)) {
        if (adding) tree.set(key, undefined);
        else tree.delete(key);
      }
      if (!adding) dropEmptyTrees(views, placement);
    }
    if (placement.counted) bucket.counted += adding ? 1 : -1;
    if (adding) bucket.objects.set(placement.id, object);
    else bucket.objects.delete(placement.id);
    if (!adding && bucket.objects.size === 0) this.buckets.delete(placement.bucket);
  }

  /**
   * A new version of an object that stays in its bucket, as most writes are (a status
   * change): it replaces the old one in the bucket, and a tree that holds the object before
   * and after under the same key is left as it is; only the trees it leaves or enters (its
   * old and new state's) change, or every tree of a sort whose key changed (a new name).
   */
  private move(before: Placement, after: Placement, object: E): void {
    const bucket = known(this.buckets.get(before.bucket), 'the bucket of a placed object');
    for (const sort of SORTS) {
      const views = bucket.sorts[sort];
      const [oldKey, newKey] = [before.keys[sort], after.keys[sort]];
      const sameKey = compareKeys(oldKey, newKey) === 0;
      const leaving = treesOf(views, before, sort, false);
      const entering = treesOf(views, after, sort, true);
      for (const tree of leaving) if (!sameKey || !entering.includes(tree)) tree.delete(oldKey);
      for (const tree of entering) if (!sameKey || !leaving.includes(tree)) tree.set(newKey, undefined);
      dropEmptyTrees(views, before);
    }
    bucket.counted += Number(after.counted) - Number(before.counted);
    bucket.objects.set(after.id, object);
  }

  /** How many objects of the team `counted` counts. */
  count(team: string | undefined): number {
    return this.buckets.get(this.bucketKey(team))?.counted ?? 0;
  }

  /** The team's listed objects named `name` (any state). */
  named(team: string | undefined, name: string): StoredObject[] {
    const bucket = this.buckets.get(this.bucketKey(team));
    const found: StoredObject[] = [];
    if (!bucket) return found;
    for (const [key] of bucket.sorts.name.visible.entries([name, ''])) {
      if (key[0] !== name) break;
      found.push(this.objectOf(known(bucket.objects.get(key[1]), 'an object of its bucket')));
    }
    return found;
  }

  /** One page: a seek to the position and a walk of the most selective tree that holds every match. */
  page(team: string | undefined, request: PageRequest): Page {
    const bucket = this.buckets.get(this.bucketKey(team));
    if (!bucket || request.limit <= 0) return { items: [], next: null };
    const views = bucket.sorts[request.sort];
    const candidates: Array<Tree | undefined> = [request.status === undefined ? views.shown : views.byState.get(request.status)];
    const where = whereOf(request);
    for (const [field, value] of where) {
      if (!this.listed.filterFields.includes(field)) throw new Error(`${this.listed.kind} lists no filter on ${field}`);
      candidates.push(views.byField.get(field)?.get(value));
    }
    // A filter without a tree matches nothing.
    if (!candidates.every((tree) => tree !== undefined)) return { items: [], next: null };
    const tree = candidates.reduce((a, b) => (b.size < a.size ? b : a));
    const matches = this.matcher(request, where);
    const { from, before } = request.created ?? NO_WINDOW;
    const bySort = request.sort === 'created_at';
    // Sized once: grown by push, the array of a page of 100 was copied four times, which
    // was most of what a list request allocated here (see walk on why that counts).
    const items: StoredObject[] = new Array<StoredObject>(Math.min(request.limit, tree.size));
    let count = 0;
    let last: Key | undefined;
    for (const [key] of walk(tree, request)) {
      if (bySort && request.order === 'asc' && before !== undefined && key[0] >= before) break;
      if (bySort && request.order === 'desc' && from !== undefined && key[0] < from) break;
      const object = this.objectOf(known(bucket.objects.get(key[1]), 'an object of its bucket'));
      if (!matches(object)) continue;
      if (count === request.limit) {
        const [value, id] = known(last, 'the last key of a full page');
        return { items, next: { value, id } };
      }
      items[count++] = object;
      last = key;
    }
    items.length = count;
    return { items, next: null };
  }

  /** Every condition of a request, checked on the objects of the tree walked. */
  private matcher(request: PageRequest, where: ReadonlyArray<[string, string]>): (object: StoredObject) => boolean {
    const stateOf = this.listed.stateOf ?? defaultStateOf;
    const { from, before } = request.created ?? NO_WINDOW;
    // Called for every entry a page walks: a loop rather than where.some, whose callback
    // would be a new closure (over the spec) on every call.
    return (object) => {
      // Only an object with a state is placed in a tree.
      const state = known(stateOf(object), 'the state of a listed object');
      if (request.status !== undefined ? state !== request.status : this.listed.hiddenStates.includes(state)) return false;
      const spec = object.spec;
      for (let i = 0; i < where.length; i++) if (spec[where[i][0]] !== where[i][1]) return false;
      const created = object.meta.createdAt;
      return (from === undefined || created >= from) && (before === undefined || created < before);
    };
  }
}

/**
 * The entries of `tree` in the request's order, from its cursor (exclusive) or the window's
 * start. Every entry is handed out in the same pair array (sorted-btree's reusedArray): a
 * page is read entry by entry, and a new pair for each was most of what a list request
 * allocated, which sets how often the scavenger pauses the loop.
 */
function walk(tree: Tree, request: PageRequest): IterableIterator<[Key, undefined]> {
  const pair: Array<Key | undefined> = [];
  const after: Key | undefined = request.after && [request.after.value, request.after.id];
  const { from, before } = request.sort === 'created_at' ? (request.created ?? NO_WINDOW) : NO_WINDOW;
  if (request.order === 'asc') {
    // Ids are never empty: [from, ''] sorts before every object created at `from`.
    const start: Key | undefined = from === undefined ? undefined : [from, ''];
    if (after && (!start || compareKeys(after, start) >= 0)) return skipping(tree.entries(after, pair), after);
    return tree.entries(start, pair);
  }
  const end: Key | undefined = before === undefined ? undefined : [before, ''];
  if (after && (!end || compareKeys(after, end) <= 0)) return tree.entriesReversed(after, pair, true);
  return tree.entriesReversed(end, pair, true);
}

/** `entries` from a key, without the key itself. */
function* skipping(entries: IterableIterator<[Key, undefined]>, key: Key): IterableIterator<[Key, undefined]> {
  for (const entry of entries) if (compareKeys(entry[0], key) !== 0) yield entry;
}

/** The indexes of every listed kind of a store. */
export class ListIndexes<E> {
  private readonly kinds = new Map<string, KindIndex<E>>();

  constructor(listed: readonly ListedKind[] = [], objectOf: (entry: E) => StoredObject) {
    for (const kind of listed) this.kinds.set(kind.kind, new KindIndex(kind, objectOf));
  }

  /** A change of an object of `kind`; kinds not listed are not indexed. */
  replace(kind: string, previous: E | undefined, next: E | undefined): void {
    this.kinds.get(kind)?.replace(previous, next);
  }

  of(kind: string): KindIndex<E> {
    const index = this.kinds.get(kind);
    if (!index) throw new Error(`${kind} is not listed by this store`);
    return index;
  }
}

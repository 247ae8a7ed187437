/**
 * Ordered indexes of the objects lists serve, so that a page costs a seek and a walk of
 * the page (O(log N + page)) instead of a scan and a sort of the whole collection.
 *
 * Per kind and team (or across teams, for a kind listed so), and for each sort the API
 * offers (`created_at` and `name`, id as the tie-break), one B+ tree per view:
 * - `default`: every listed object whose state is not hidden by default;
 * - one per state (the `status` filter);
 * - one per value of each spec field the kind lists by equality (`where`).
 * Both directions walk the same tree, forwards or backwards. Each object of a bucket has a
 * slot in its columns (what the store keeps of it, `E`, read through `objectOf`; its id,
 * creation time and name), and the trees hold slots alone, ordered by the columns: an
 * object costs a tree four bytes outside the heap (lib/ordered-slots.ts), and its slot is
 * found again in its state's tree. So a write that keeps an object's sort values and views
 * (most status writes) changes no tree at all, and one that changes its state changes its
 * old and new state's trees only. Counts for quotas are kept beside. An object is listed
 * once it has a state (`stateOf`); before that, and once destroyed, no list shows it. The
 * stores call `replace` at the single place where their memory changes, synchronously, so
 * the very next page reads the write.
 */
import { NO_SLOT, OrderedSlots, SlotWalk } from '../lib/ordered-slots';
import type { ListSort, Page, PageRequest, Position, StoredObject } from './types';
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

/**
 * A tree's key: the slot of an object in its bucket's columns, where the tree's order reads
 * its sort value and id. A number costs a tree nothing beyond its place in a leaf; a
 * `[value, id]` pair per object and sort was a third of what an index held per object.
 */
type Slot = number;
type Tree = OrderedSlots;

/** The slot that holds no object: a seek writes the position it seeks into its columns. */
const PROBE: Slot = 0;

/** A creation time as it sorts: ms since the epoch (one number, not a string); unreadable sorts first. */
function createdValue(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? -Infinity : ms;
}

const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One sort's trees of a bucket. */
class SortedViews {
  /**
   * Every listed object; kept for the name sort only (named), to spare memory, and the
   * shown tree itself for a kind that hides no state.
   */
  readonly visible: Tree;
  readonly shown: Tree;
  readonly byState = new Map<string, Tree>();
  /** `field` -> value -> tree. */
  readonly byField = new Map<string, Map<string, Tree>>();

  constructor(
    readonly compare: (a: Slot, b: Slot) => number,
    hidesStates: boolean,
  ) {
    this.shown = this.newTree();
    this.visible = hidesStates ? this.newTree() : this.shown;
  }

  newTree(): Tree {
    return new OrderedSlots(this.compare);
  }
}

/** Where an object sits in the indexes; computed once per version. */
interface Placement {
  bucket: string;
  id: string;
  state: string;
  hidden: boolean;
  created: number;
  name: string;
  fields: Array<[string, string]>;
  counted: boolean;
}

/** Whether two placements of an object sort alike in `sort`. */
const sameSortValue = (sort: ListSort, a: Placement, b: Placement): boolean => (sort === 'created_at' ? a.created === b.created : a.name === b.name);

/**
 * The listed objects of one team (or of every team, for a kind listed so): each in a slot
 * of the columns, the trees of both sorts ordering slots by the columns' values.
 */
class Bucket<E> {
  // The columns, by slot; slot 0 is the probe. `created` holds doubles alone, so V8 keeps it unboxed.
  readonly entries: Array<E | undefined> = [undefined];
  readonly ids: string[] = [''];
  readonly created: number[] = [0];
  readonly names: string[] = [''];
  private readonly free: Slot[] = [];
  readonly sorts: Record<ListSort, SortedViews>;
  counted = 0;

  constructor(hidesStates: boolean) {
    const { ids, created, names } = this;
    this.sorts = {
      created_at: new SortedViews((a, b) => (created[a] < created[b] ? -1 : created[a] > created[b] ? 1 : compareIds(ids[a], ids[b])), hidesStates),
      name: new SortedViews((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : compareIds(ids[a], ids[b])), hidesStates),
    };
  }

  /** A slot for a new object, its columns written; `id` is its id, as the string to hold. */
  claim(placement: Placement, entry: E, id: string): Slot {
    const slot = this.free.pop() ?? this.entries.length;
    this.ids[slot] = id;
    this.write(slot, placement, entry);
    return slot;
  }

  /** Writes an object's new version into its slot; only once its trees no longer hold it under the old values. */
  write(slot: Slot, placement: Placement, entry: E): void {
    this.entries[slot] = entry;
    this.created[slot] = placement.created;
    this.names[slot] = placement.name;
  }

  /** Frees an object's slot, once no tree holds it. */
  release(slot: Slot): void {
    this.entries[slot] = undefined;
    this.ids[slot] = '';
    this.names[slot] = '';
    this.created[slot] = 0;
    this.free.push(slot);
  }

  /** Objects in the columns: every slot but the probe and those freed. */
  get size(): number {
    return this.entries.length - 1 - this.free.length;
  }

  /**
   * The slot of the object at `placement`, found in its state's tree by its creation time
   * and id: a map of ids to slots beside the trees was some 40 bytes an object.
   */
  slotOf(placement: Placement): Slot {
    const tree = this.sorts.created_at.byState.get(placement.state);
    return tree ? tree.find(this.probe('created_at', placement.created, placement.id)) : NO_SLOT;
  }

  entryAt(slot: Slot): E {
    return known(this.entries[slot], 'an object of its bucket');
  }

  /** Writes a position into the probe's columns: `value` is the sort's (a creation time or a name). */
  probe(sort: ListSort, value: string | number, id: string): Slot {
    this.ids[PROBE] = id;
    if (sort === 'created_at') this.created[PROBE] = typeof value === 'number' ? value : createdValue(value);
    else this.names[PROBE] = String(value);
    return PROBE;
  }
}

const SORTS: ListSort[] = ['created_at', 'name'];

const defaultStateOf = (object: StoredObject): string | undefined => {
  const state = object.status.status;
  return typeof state === 'string' && state !== 'destroyed' ? state : undefined;
};

// Shared by the requests without a filter: a page allocates only what it must.
const NO_FILTERS: ReadonlyArray<[string, string]> = Object.freeze([]);
const whereOf = (request: PageRequest): ReadonlyArray<[string, string]> => (request.where ? Object.entries(request.where) : NO_FILTERS);

/** A request's creation window, as creation times sort; open ends are infinite. */
function windowOf(request: PageRequest): { from: number; before: number } {
  const { from, before } = request.created ?? {};
  return { from: from === undefined ? -Infinity : createdValue(from), before: before === undefined ? Infinity : createdValue(before) };
}

/** The trees of one sort that hold an object at `placement`; those missing are made when `create`, else left out. */
function treesOf(views: SortedViews, placement: Placement, sort: ListSort, create: boolean): Tree[] {
  const trees: Tree[] = [];
  const byState = treeIn(views, views.byState, placement.state, create);
  if (byState) trees.push(byState);
  if (sort === 'name' && views.visible !== views.shown) trees.push(views.visible);
  if (!placement.hidden) trees.push(views.shown);
  for (const [field, value] of placement.fields) {
    let values = views.byField.get(field);
    if (!values) {
      if (!create) continue;
      views.byField.set(field, (values = new Map<string, Tree>()));
    }
    const tree = treeIn(views, values, value, create);
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
function treeIn(views: SortedViews, map: Map<string, Tree>, key: string, create: boolean): Tree | undefined {
  let tree = map.get(key);
  if (!tree && create) map.set(key, (tree = views.newTree()));
  return tree;
}

/**
 * Names many objects share (a delivery's event type) held once rather than once per object:
 * the first NAMES_SHARED distinct names of a kind are kept and handed out for equal ones. A
 * kind of unique names (load balancers) pays for that many strings, no more.
 */
const NAMES_SHARED = 1024;

class SharedNames {
  private readonly names = new Map<string, string>();

  of(name: string): string {
    const held = this.names.get(name);
    if (held !== undefined) return held;
    if (this.names.size < NAMES_SHARED) this.names.set(name, name);
    return name;
  }
}

/** Indexes of one kind; `E` is what the store keeps of an object, `objectOf` reads the object from it. */
export class KindIndex<E> {
  private readonly buckets = new Map<string, Bucket<E>>();
  private readonly names = new SharedNames();

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
    const name = this.listed.nameOf(spec);
    const fields: Array<[string, string]> = [];
    for (const field of this.listed.filterFields) {
      const value = spec[field];
      if (typeof value === 'string') fields.push([field, value]);
    }
    return {
      bucket: this.listed.acrossTeams ? '' : object.meta.team,
      id: object.meta.id,
      state,
      hidden: this.listed.hiddenStates.includes(state),
      created: createdValue(object.meta.createdAt),
      name: typeof name === 'string' ? this.names.of(name) : '',
      fields,
      counted: this.listed.counted?.(object) ?? false,
    };
  }

  /**
   * Takes a change of one object in: `previous` leaves, `next` enters (either may be absent).
   * `id`: the object's id as the caller holds it, for the index to hold the same string.
   */
  replace(previous: E | undefined, next: E | undefined, id?: string): void {
    const before = previous && this.placementOf(this.objectOf(previous));
    const after = next && this.placementOf(this.objectOf(next));
    if (before && after && before.bucket === after.bucket) {
      this.move(before, after, next);
      return;
    }
    if (before) this.remove(before);
    if (after) this.add(after, next, id);
  }

  private add(placement: Placement, entry: E, id?: string): void {
    let bucket = this.buckets.get(placement.bucket);
    if (!bucket) this.buckets.set(placement.bucket, (bucket = new Bucket(this.listed.hiddenStates.length > 0)));
    // The caller's string when it is this object's id (ObjectCache holds it too).
    const slot = bucket.claim(placement, entry, id === placement.id ? id : placement.id);
    for (const sort of SORTS) for (const tree of treesOf(bucket.sorts[sort], placement, sort, true)) tree.add(slot);
    if (placement.counted) bucket.counted += 1;
  }

  private remove(placement: Placement): void {
    const bucket = this.buckets.get(placement.bucket);
    const slot = bucket ? bucket.slotOf(placement) : NO_SLOT;
    if (!bucket || slot === NO_SLOT) return;
    for (const sort of SORTS) {
      const views = bucket.sorts[sort];
      for (const tree of treesOf(views, placement, sort, false)) tree.delete(slot);
      dropEmptyTrees(views, placement);
    }
    bucket.release(slot);
    if (placement.counted) bucket.counted -= 1;
    if (bucket.size === 0) this.buckets.delete(placement.bucket);
  }

  /**
   * A new version of an object that stays in its bucket, as most writes are (a status
   * change): a tree that holds the object before and after under the same sort value is
   * left as it is; only the trees it leaves or enters (its old and new state's) change, or
   * every tree of a sort whose value changed (a new name). The trees order slots by the
   * columns, so the object leaves them before its columns change and enters them after.
   */
  private move(before: Placement, after: Placement, entry: E): void {
    const bucket = this.buckets.get(before.bucket);
    const slot = bucket ? bucket.slotOf(before) : NO_SLOT;
    if (!bucket || slot === NO_SLOT) {
      this.add(after, entry);
      return;
    }
    const changes = SORTS.map((sort) => {
      const views = bucket.sorts[sort];
      const same = sameSortValue(sort, before, after);
      const leaving = treesOf(views, before, sort, false);
      const entering = treesOf(views, after, sort, true);
      return {
        views,
        leave: leaving.filter((tree) => !same || !entering.includes(tree)),
        enter: entering.filter((tree) => !same || !leaving.includes(tree)),
      };
    });
    for (const { leave } of changes) for (const tree of leave) tree.delete(slot);
    bucket.write(slot, after, entry);
    for (const { views, enter } of changes) {
      for (const tree of enter) tree.add(slot);
      dropEmptyTrees(views, before);
    }
    bucket.counted += Number(after.counted) - Number(before.counted);
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
    // Ids are never empty: ('', name) sorts before every object of that name.
    const walk = bucket.sorts.name.visible.ascending(bucket.probe('name', name, ''));
    for (let slot = walk.next(); slot !== NO_SLOT; slot = walk.next()) {
      if (bucket.names[slot] !== name) break;
      found.push(this.objectOf(bucket.entryAt(slot)));
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
    const window = windowOf(request);
    const bySort = request.sort === 'created_at';
    // Sized once: grown by push, the array of a page of 100 was copied four times, which
    // was most of what a list request allocated here (see walk on why that counts).
    const items: StoredObject[] = new Array<StoredObject>(Math.min(request.limit, tree.size));
    let count = 0;
    let last: Slot | undefined;
    const slots = walk(bucket, tree, request, window);
    for (let slot = slots.next(); slot !== NO_SLOT; slot = slots.next()) {
      const created = bucket.created[slot];
      if (bySort && request.order === 'asc' && created >= window.before) break;
      if (bySort && request.order === 'desc' && created < window.from) break;
      if (created < window.from || created >= window.before) continue;
      const object = this.objectOf(bucket.entryAt(slot));
      if (!matches(object)) continue;
      if (count === request.limit) {
        const end = known(last, 'the last slot of a full page');
        const lastObject = known(items[count - 1], 'the last item of a full page');
        return { items, next: { value: bySort ? lastObject.meta.createdAt : bucket.names[end], id: bucket.ids[end] } };
      }
      items[count++] = object;
      last = slot;
    }
    items.length = count;
    return { items, next: null };
  }

  /** The state and field conditions of a request, checked on the objects of the tree walked. */
  private matcher(request: PageRequest, where: ReadonlyArray<[string, string]>): (object: StoredObject) => boolean {
    const stateOf = this.listed.stateOf ?? defaultStateOf;
    // Called for every entry a page walks: a loop rather than where.some, whose callback
    // would be a new closure (over the spec) on every call.
    return (object) => {
      // Only an object with a state is placed in a tree.
      const state = known(stateOf(object), 'the state of a listed object');
      if (request.status !== undefined ? state !== request.status : this.listed.hiddenStates.includes(state)) return false;
      const spec = object.spec;
      for (let i = 0; i < where.length; i++) if (spec[where[i][0]] !== where[i][1]) return false;
      return true;
    };
  }
}

/**
 * The slots of `tree` in the request's order, from its cursor (exclusive) or the window's
 * start, whichever is later. A walk allocates nothing per slot: a page is read slot by
 * slot, and a new pair for each was most of what a list request allocated, which sets how
 * often the scavenger pauses the loop.
 */
function walk<E>(bucket: Bucket<E>, tree: Tree, request: PageRequest, window: { from: number; before: number }): SlotWalk {
  const bySort = request.sort === 'created_at';
  const ascending = request.order === 'asc';
  // The window's edge as a position: ids are never empty, so ('', t) sorts before every object created at t.
  const edge = bySort ? (ascending ? window.from : window.before) : undefined;
  const after = request.after;
  if (after && !(edge !== undefined && Number.isFinite(edge) && beyondCursor(edge, after, ascending))) {
    const probe = bucket.probe(request.sort, after.value, after.id);
    return ascending ? tree.ascending(probe, true) : tree.descending(probe);
  }
  if (edge === undefined || !Number.isFinite(edge)) return ascending ? tree.ascending() : tree.descending();
  const probe = bucket.probe('created_at', edge, '');
  return ascending ? tree.ascending(probe) : tree.descending(probe);
}

/** Whether the window's edge (a creation time, id '') lies past the cursor in the walk's direction, so the walk starts there. */
function beyondCursor(edge: number, after: Position, ascending: boolean): boolean {
  const cursor = createdValue(after.value);
  // At equal times ('', t) sorts before (id, t): ascending the cursor is later, descending the edge is.
  return ascending ? edge > cursor : edge <= cursor;
}

/** The indexes of every listed kind of a store. */
export class ListIndexes<E> {
  private readonly kinds = new Map<string, KindIndex<E>>();

  constructor(listed: readonly ListedKind[] = [], objectOf: (entry: E) => StoredObject) {
    for (const kind of listed) this.kinds.set(kind.kind, new KindIndex(kind, objectOf));
  }

  /** A change of an object of `kind`; kinds not listed are not indexed. */
  replace(kind: string, previous: E | undefined, next: E | undefined, id?: string): void {
    this.kinds.get(kind)?.replace(previous, next, id);
  }

  of(kind: string): KindIndex<E> {
    const index = this.kinds.get(kind);
    if (!index) throw new Error(`${kind} is not listed by this store`);
    return index;
  }
}

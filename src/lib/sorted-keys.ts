/**
 * A set of strings in order, as one sorted array: for the many small indexes (the events
 * of one resource) where a tree's nodes would cost more than its keys, and for large ones
 * whose keys arrive about in order and leave from the front (a retention), where an
 * insertion is near the end and a trim is one splice. `SortedMap` is the same with a value
 * beside each key, in an array of its own.
 */
/**
 * Below this many keys an insertion copies the array at its exact size: most indexes are of
 * one resource's few events, and an array grown by push keeps room for 16 more keys.
 */
const EXACT_UP_TO = 16;

/** `items` with `item` at `at`: a copy of exact size while small, else `items` itself, grown. */
function insertedAt<T>(items: T[], at: number, item: T): T[] {
  if (items.length >= EXACT_UP_TO) {
    if (at === items.length) items.push(item);
    else items.splice(at, 0, item);
    return items;
  }
  const copy = new Array<T>(items.length + 1);
  for (let i = 0; i < at; i++) copy[i] = items[i];
  copy[at] = item;
  for (let i = at; i < items.length; i++) copy[i + 1] = items[i];
  return copy;
}

/** The place of the first of the sorted `keys` at or above `key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle] < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

function* ascendingFrom(keys: readonly string[], from: string | undefined): Generator<string> {
  for (let at = from === undefined ? 0 : lowerBound(keys, from); at < keys.length; at++) yield keys[at];
}

function* descendingBelow(keys: readonly string[], from: string | undefined): Generator<string> {
  for (let at = (from === undefined ? keys.length : lowerBound(keys, from)) - 1; at >= 0; at--) yield keys[at];
}

/** What a walk of either kind of index needs. */
export interface OrderedKeys {
  readonly size: number;
  has(key: string): boolean;
  /** The keys from the first at or above `from` (the first of all without one), ascending. */
  ascending(from?: string): Generator<string>;
  /** The keys from the last below `from` (the last of all without one), descending. */
  descending(from?: string): Generator<string>;
}

export class SortedKeys implements OrderedKeys {
  private keys: string[] = [];

  get size(): number {
    return this.keys.length;
  }

  add(key: string): void {
    const at = lowerBound(this.keys, key);
    if (this.keys[at] !== key) this.keys = insertedAt(this.keys, at, key);
  }

  has(key: string): boolean {
    return this.keys[lowerBound(this.keys, key)] === key;
  }

  /** Drops every key below `bound`. */
  deleteBelow(bound: string): void {
    this.keys.splice(0, lowerBound(this.keys, bound));
  }

  ascending(from?: string): Generator<string> {
    return ascendingFrom(this.keys, from);
  }

  descending(from?: string): Generator<string> {
    return descendingBelow(this.keys, from);
  }
}

export class SortedMap<V> implements OrderedKeys {
  private keys: string[] = [];
  private values: V[] = [];

  get size(): number {
    return this.keys.length;
  }

  set(key: string, value: V): void {
    const at = lowerBound(this.keys, key);
    if (this.keys[at] === key) {
      this.values[at] = value;
      return;
    }
    this.keys = insertedAt(this.keys, at, key);
    this.values = insertedAt(this.values, at, value);
  }

  get(key: string): V | undefined {
    const at = lowerBound(this.keys, key);
    return this.keys[at] === key ? this.values[at] : undefined;
  }

  has(key: string): boolean {
    return this.keys[lowerBound(this.keys, key)] === key;
  }

  /** Drops every key below `bound` with its value, handing each to `dropped` first. */
  deleteBelow(bound: string, dropped?: (key: string, value: V) => void): void {
    const count = lowerBound(this.keys, bound);
    if (dropped) for (let i = 0; i < count; i++) dropped(this.keys[i], this.values[i]);
    this.keys.splice(0, count);
    this.values.splice(0, count);
  }

  ascending(from?: string): Generator<string> {
    return ascendingFrom(this.keys, from);
  }

  descending(from?: string): Generator<string> {
    return descendingBelow(this.keys, from);
  }
}

/**
 * A set of strings in order, as one sorted array: for the many small indexes (the events
 * of one resource) where a tree's nodes would cost more than its keys, and for large ones
 * whose keys arrive about in order and leave from the front (a retention), where an
 * insertion is near the end and a trim is one splice.
 */
/**
 * Below this many keys an insertion copies the array at its exact size: most indexes are of
 * one resource's few events, and an array grown by push keeps room for 16 more keys.
 */
const EXACT_UP_TO = 16;

function inserted(keys: string[], at: number, key: string): string[] {
  const copy = new Array<string>(keys.length + 1);
  for (let i = 0; i < at; i++) copy[i] = keys[i];
  copy[at] = key;
  for (let i = at; i < keys.length; i++) copy[i + 1] = keys[i];
  return copy;
}

export class SortedKeys {
  private keys: string[] = [];

  get size(): number {
    return this.keys.length;
  }

  add(key: string): void {
    const at = this.lowerBound(key);
    if (this.keys[at] === key) return;
    if (this.keys.length < EXACT_UP_TO) this.keys = inserted(this.keys, at, key);
    else if (at === this.keys.length) this.keys.push(key);
    else this.keys.splice(at, 0, key);
  }

  has(key: string): boolean {
    return this.keys[this.lowerBound(key)] === key;
  }

  /** Drops every key below `bound`. */
  deleteBelow(bound: string): void {
    this.keys.splice(0, this.lowerBound(bound));
  }

  /** The keys from the first at or above `from` (the first of all without one), ascending. */
  *ascending(from?: string): Generator<string> {
    for (let at = from === undefined ? 0 : this.lowerBound(from); at < this.keys.length; at++) yield this.keys[at];
  }

  /** The keys from the last below `from` (the last of all without one), descending. */
  *descending(from?: string): Generator<string> {
    for (let at = (from === undefined ? this.keys.length : this.lowerBound(from)) - 1; at >= 0; at--) yield this.keys[at];
  }

  /** The place of the first key at or above `key`. */
  private lowerBound(key: string): number {
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.keys[middle] < key) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/**
 * A set of small integers (slots) in an order a comparator gives, kept in leaves of
 * Int32Array: the list indexes' trees (store/list-index.ts), nine per webhook delivery.
 *
 * A B+ tree of JavaScript arrays (sorted-btree) cost about 17 bytes a slot: 8 for the
 * array element, and half-empty leaves, since a split halves a node and an index filled in
 * creation order never fills the halves again. Here a slot costs 4 bytes in memory outside
 * the JavaScript heap (which V8 does not grow by half again), and a leaf that overflows at
 * its end while it is the last one (an append in creation order) keeps its slots and starts
 * an empty leaf instead of splitting: such an index stays full.
 *
 * A leaf holds its count in its first element, so that a set of a few slots (one team's
 * few objects in a state) is the set, an array of one leaf and that leaf: about as small as
 * sorted-btree's smallest tree. The leaves are found by a binary search of their last slots,
 * so the structure is two levels deep: a million slots are some 2,000 leaves, and splicing
 * that array on a split (once per LEAF_SLOTS / 2 insertions at worst) is a small copy.
 */

/** Slots a leaf holds at most: 2 KiB. */
const LEAF_SLOTS = 512;
/** A new leaf's room; it doubles up to the most, so a small index stays small. */
const FIRST_ROOM = 4;
/** Where a leaf keeps its count; its slots follow. */
const COUNT = 0;

/** What a walk answers once it has no more slots. */
export const NO_SLOT = -1;

/** Slots one at a time, with no allocation per step (a page reads entry by entry). */
export interface SlotWalk {
  /** The next slot, or NO_SLOT. */
  next(): number;
}

/** A leaf with room for `room` slots, none used. */
const newLeaf = (room: number): Int32Array => new Int32Array(room + 1);
/** The slot at place `at` (from 0) of a leaf. */
const slotAt = (leaf: Int32Array, at: number): number => leaf[at + 1];

export class OrderedSlots {
  /** Made with the first slot, and let go with the last: an empty set holds no array. */
  private leaves: Int32Array[] | null = null;
  size = 0;

  constructor(
    private readonly compare: (a: number, b: number) => number,
    /** Smaller in the property test, so that a few hundred changes split and merge leaves. */
    private readonly leafSlots = LEAF_SLOTS,
  ) {}

  /** Adds `slot`; one the set holds (compares equal to) is left as it is. */
  add(slot: number): void {
    const leaves = (this.leaves ??= [newLeaf(FIRST_ROOM)]);
    const leafIndex = this.leafFor(leaves, slot);
    let leaf = leaves[leafIndex];
    const at = this.lowerBound(leaf, slot);
    const count = leaf[COUNT];
    if (at < count && this.compare(slotAt(leaf, at), slot) === 0) return;
    this.size++;
    if (count === this.leafSlots) {
      this.insertFull(leaves, leafIndex, at, slot);
      return;
    }
    if (count === leaf.length - 1) leaf = leaves[leafIndex] = this.copied(leaf, count + 1);
    leaf.copyWithin(at + 2, at + 1, count + 1);
    leaf[at + 1] = slot;
    leaf[COUNT] = count + 1;
  }

  /** Removes `slot` (found by its order: its columns must still read as when it was added); whether it was there. */
  delete(slot: number): boolean {
    const leaves = this.leaves;
    if (!leaves) return false;
    const leafIndex = this.leafFor(leaves, slot);
    const leaf = leaves[leafIndex];
    const at = this.lowerBound(leaf, slot);
    const count = leaf[COUNT];
    if (at === count || this.compare(slotAt(leaf, at), slot) !== 0) return false;
    leaf.copyWithin(at + 1, at + 2, count + 1);
    leaf[COUNT] = count - 1;
    this.size--;
    if (this.size === 0) this.leaves = null;
    else if (count === 1) leaves.splice(leafIndex, 1);
    else if (count - 1 < this.leafSlots / 4) this.mergeIfRoom(leaves, leafIndex);
    return true;
  }

  /** The slot that compares equal to `probe` (the same position), or NO_SLOT. */
  find(probe: number): number {
    if (!this.leaves) return NO_SLOT;
    const leaf = this.leaves[this.leafFor(this.leaves, probe)];
    const at = this.lowerBound(leaf, probe);
    return at < leaf[COUNT] && this.compare(slotAt(leaf, at), probe) === 0 ? slotAt(leaf, at) : NO_SLOT;
  }

  /** The slots in order from the first at or after `from` (after it, when `exclusive`); from the start without one. */
  ascending(from?: number, exclusive = false): SlotWalk {
    const leaves = this.leaves ?? [];
    let leafIndex = 0;
    let at = 0;
    if (from !== undefined && leaves.length > 0) {
      leafIndex = this.leafFor(leaves, from);
      at = exclusive ? this.upperBound(leaves[leafIndex], from) : this.lowerBound(leaves[leafIndex], from);
    }
    return {
      next(): number {
        while (leafIndex < leaves.length) {
          const leaf = leaves[leafIndex];
          if (at < leaf[COUNT]) return slotAt(leaf, at++);
          leafIndex++;
          at = 0;
        }
        return NO_SLOT;
      },
    };
  }

  /** The slots in reverse order from the last strictly before `from`; from the end without one. */
  descending(from?: number): SlotWalk {
    const leaves = this.leaves ?? [];
    let leafIndex = leaves.length - 1;
    // The place after the walk's first slot.
    let at = leafIndex >= 0 ? leaves[leafIndex][COUNT] : 0;
    if (from !== undefined && leaves.length > 0) {
      leafIndex = this.leafFor(leaves, from);
      at = this.lowerBound(leaves[leafIndex], from);
    }
    return {
      next(): number {
        while (leafIndex >= 0) {
          if (at > 0) return slotAt(leaves[leafIndex], --at);
          leafIndex--;
          if (leafIndex >= 0) at = leaves[leafIndex][COUNT];
        }
        return NO_SLOT;
      },
    };
  }

  /** The leaf where `slot` is or would go: the first whose last slot is at or after it, else the last. */
  private leafFor(leaves: Int32Array[], slot: number): number {
    let low = 0;
    let high = leaves.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const leaf = leaves[middle];
      if (this.compare(slotAt(leaf, leaf[COUNT] - 1), slot) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The place in a leaf of its first slot at or after `slot`. */
  private lowerBound(leaf: Int32Array, slot: number): number {
    return this.placeOf(leaf, slot, false);
  }

  /** The place in a leaf of its first slot after `slot`. */
  private upperBound(leaf: Int32Array, slot: number): number {
    return this.placeOf(leaf, slot, true);
  }

  /** A binary search of a leaf: its first slot after `slot`, or at or after it unless `past`. */
  private placeOf(leaf: Int32Array, slot: number, past: boolean): number {
    let low = 0;
    let high = leaf[COUNT];
    while (low < high) {
      const middle = (low + high) >>> 1;
      const order = this.compare(slotAt(leaf, middle), slot);
      if (order < 0 || (past && order === 0)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** A leaf with the first `count` slots of `leaf`, and room for `wanted`: a power of two from FIRST_ROOM up to leafSlots. */
  private copied(leaf: Int32Array, wanted: number, count = leaf[COUNT]): Int32Array {
    let room = FIRST_ROOM;
    while (room < wanted) room *= 2;
    const copy = newLeaf(Math.min(room, this.leafSlots));
    copy.set(leaf.subarray(0, count + 1));
    copy[COUNT] = count;
    return copy;
  }

  /**
   * Inserts into a full leaf. Past its end (only the last leaf is entered there: an append
   * in order) the slot starts a new leaf and the full one stays full; elsewhere the leaf
   * splits in halves.
   */
  private insertFull(leaves: Int32Array[], leafIndex: number, at: number, slot: number): void {
    const leaf = leaves[leafIndex];
    if (at === this.leafSlots) {
      const fresh = newLeaf(FIRST_ROOM);
      fresh[COUNT] = 1;
      fresh[1] = slot;
      leaves.push(fresh);
      return;
    }
    const half = this.leafSlots / 2;
    const upper = newLeaf(this.leafSlots);
    upper.set(leaf.subarray(half + 1), 1);
    upper[COUNT] = half;
    leaf[COUNT] = half;
    leaves.splice(leafIndex + 1, 0, upper);
    const [into, place] = at <= half ? [leaf, at] : [upper, at - half];
    into.copyWithin(place + 2, place + 1, half + 1);
    into[place + 1] = slot;
    into[COUNT] = half + 1;
  }

  /**
   * Moves a sparse leaf's slots into the neighbour before or after it, if the two fill no
   * more than three quarters of a leaf: the room left keeps insertions and deletions at one
   * place from merging and splitting in turn.
   */
  private mergeIfRoom(leaves: Int32Array[], leafIndex: number): void {
    const count = leaves[leafIndex][COUNT];
    for (const neighbour of [leafIndex - 1, leafIndex + 1]) {
      if (neighbour < 0 || neighbour >= leaves.length) continue;
      const total = leaves[neighbour][COUNT] + count;
      if (total > (this.leafSlots * 3) / 4) continue;
      const [first, second] = neighbour < leafIndex ? [neighbour, leafIndex] : [leafIndex, neighbour];
      const merged = this.copied(leaves[first], total);
      merged.set(leaves[second].subarray(1, leaves[second][COUNT] + 1), merged[COUNT] + 1);
      merged[COUNT] = total;
      leaves[first] = merged;
      leaves.splice(second, 1);
      return;
    }
  }
}

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
 * The leaves are found by a binary search of their last slots, so the structure is two
 * levels deep: a million slots are some 2,000 leaves, and splicing that array on a split
 * (once per LEAF_SLOTS / 2 insertions at worst) is a small copy.
 */

/** Slots a leaf holds at most: 2 KiB. */
const LEAF_SLOTS = 512;
/** A new leaf's room; it doubles up to the most, so a small index (one team's few objects) stays small. */
const FIRST_ROOM = 4;

/** What a walk answers once it has no more slots. */
export const NO_SLOT = -1;

/** Slots one at a time, with no allocation per step (a page reads entry by entry). */
export interface SlotWalk {
  /** The next slot, or NO_SLOT. */
  next(): number;
}

export class OrderedSlots {
  private leaves: Int32Array[] = [];
  /** Slots used in each leaf. */
  private counts: number[] = [];
  size = 0;
  /** A leaf that falls below this after a deletion is merged into a neighbour, if the two fill no more than mergeUpTo. */
  private readonly mergeBelow: number;
  /** Room left after a merge, so that insertions and deletions at one place do not merge and split in turn. */
  private readonly mergeUpTo: number;

  constructor(
    private readonly compare: (a: number, b: number) => number,
    /** Smaller in the property test, so that a few hundred changes split and merge leaves. */
    private readonly leafSlots = LEAF_SLOTS,
  ) {
    this.mergeBelow = leafSlots / 4;
    this.mergeUpTo = (leafSlots * 3) / 4;
  }

  /** Adds `slot`; one the set holds (compares equal to) is left as it is. */
  add(slot: number): void {
    if (this.leaves.length === 0) {
      this.leaves.push(new Int32Array(FIRST_ROOM));
      this.counts.push(0);
    }
    const leafIndex = this.leafFor(slot);
    const at = this.lowerBound(leafIndex, slot);
    const count = this.counts[leafIndex];
    if (at < count && this.compare(this.leaves[leafIndex][at], slot) === 0) return;
    if (count === this.leaves[leafIndex].length && count < this.leafSlots) this.grow(leafIndex);
    if (count === this.leafSlots) {
      this.insertFull(leafIndex, at, slot);
    } else {
      const leaf = this.leaves[leafIndex];
      leaf.copyWithin(at + 1, at, count);
      leaf[at] = slot;
      this.counts[leafIndex] = count + 1;
    }
    this.size++;
  }

  /** Removes `slot` (found by its order: its columns must still read as when it was added); whether it was there. */
  delete(slot: number): boolean {
    if (this.leaves.length === 0) return false;
    const leafIndex = this.leafFor(slot);
    const at = this.lowerBound(leafIndex, slot);
    const count = this.counts[leafIndex];
    const leaf = this.leaves[leafIndex];
    if (at === count || this.compare(leaf[at], slot) !== 0) return false;
    leaf.copyWithin(at, at + 1, count);
    this.counts[leafIndex] = count - 1;
    this.size--;
    if (count - 1 === 0) this.dropLeaf(leafIndex);
    else if (count - 1 < this.mergeBelow) this.mergeIfRoom(leafIndex);
    return true;
  }

  /** The slot that compares equal to `probe` (the same position), or NO_SLOT. */
  find(probe: number): number {
    if (this.leaves.length === 0) return NO_SLOT;
    const leafIndex = this.leafFor(probe);
    const at = this.lowerBound(leafIndex, probe);
    const leaf = this.leaves[leafIndex];
    return at < this.counts[leafIndex] && this.compare(leaf[at], probe) === 0 ? leaf[at] : NO_SLOT;
  }

  /** The slots in order from the first at or after `from` (after it, when `exclusive`); from the start without one. */
  ascending(from?: number, exclusive = false): SlotWalk {
    let leafIndex = 0;
    let at = 0;
    if (from !== undefined && this.leaves.length > 0) {
      leafIndex = this.leafFor(from);
      at = exclusive ? this.upperBound(leafIndex, from) : this.lowerBound(leafIndex, from);
    }
    const { leaves, counts } = this;
    return {
      next(): number {
        while (leafIndex < leaves.length) {
          if (at < counts[leafIndex]) return leaves[leafIndex][at++];
          leafIndex++;
          at = 0;
        }
        return NO_SLOT;
      },
    };
  }

  /** The slots in reverse order from the last strictly before `from`; from the end without one. */
  descending(from?: number): SlotWalk {
    const { leaves, counts } = this;
    let leafIndex = leaves.length - 1;
    // The place after the walk's first slot.
    let at = leafIndex >= 0 ? counts[leafIndex] : 0;
    if (from !== undefined && leaves.length > 0) {
      leafIndex = this.leafFor(from);
      at = this.lowerBound(leafIndex, from);
    }
    return {
      next(): number {
        while (leafIndex >= 0) {
          if (at > 0) return leaves[leafIndex][--at];
          leafIndex--;
          if (leafIndex >= 0) at = counts[leafIndex];
        }
        return NO_SLOT;
      },
    };
  }

  /** The leaf where `slot` is or would go: the first whose last slot is at or after it, else the last. */
  private leafFor(slot: number): number {
    let low = 0;
    let high = this.leaves.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.compare(this.leaves[middle][this.counts[middle] - 1], slot) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The place in a leaf of its first slot at or after `slot`. */
  private lowerBound(leafIndex: number, slot: number): number {
    const leaf = this.leaves[leafIndex];
    let low = 0;
    let high = this.counts[leafIndex];
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.compare(leaf[middle], slot) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The place in a leaf of its first slot after `slot`. */
  private upperBound(leafIndex: number, slot: number): number {
    const leaf = this.leaves[leafIndex];
    let low = 0;
    let high = this.counts[leafIndex];
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.compare(leaf[middle], slot) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The room of a leaf for `count` slots: a power of two from FIRST_ROOM up to leafSlots. */
  private roomFor(count: number): number {
    let room = FIRST_ROOM;
    while (room < count) room *= 2;
    return Math.min(room, this.leafSlots);
  }

  private grow(leafIndex: number): void {
    const leaf = this.leaves[leafIndex];
    const grown = new Int32Array(this.roomFor(leaf.length + 1));
    grown.set(leaf.subarray(0, this.counts[leafIndex]));
    this.leaves[leafIndex] = grown;
  }

  /**
   * Inserts into a full leaf. Past its end (only the last leaf is entered there: an append
   * in order) the slot starts a new leaf and the full one stays full; elsewhere the leaf
   * splits in halves.
   */
  private insertFull(leafIndex: number, at: number, slot: number): void {
    const leaf = this.leaves[leafIndex];
    if (at === this.leafSlots) {
      const fresh = new Int32Array(FIRST_ROOM);
      fresh[0] = slot;
      this.leaves.push(fresh);
      this.counts.push(1);
      return;
    }
    const half = this.leafSlots / 2;
    const upper = new Int32Array(this.leafSlots);
    upper.set(leaf.subarray(half));
    this.leaves.splice(leafIndex + 1, 0, upper);
    this.counts.splice(leafIndex + 1, 0, half);
    this.counts[leafIndex] = half;
    const [target, place] = at <= half ? [leafIndex, at] : [leafIndex + 1, at - half];
    const into = this.leaves[target];
    into.copyWithin(place + 1, place, half);
    into[place] = slot;
    this.counts[target] = half + 1;
  }

  private dropLeaf(leafIndex: number): void {
    this.leaves.splice(leafIndex, 1);
    this.counts.splice(leafIndex, 1);
  }

  /** Moves a sparse leaf's slots into the neighbour before or after it, if that has room for them. */
  private mergeIfRoom(leafIndex: number): void {
    const count = this.counts[leafIndex];
    for (const neighbour of [leafIndex - 1, leafIndex + 1]) {
      if (neighbour < 0 || neighbour >= this.leaves.length) continue;
      const neighbourCount = this.counts[neighbour];
      if (neighbourCount + count > this.mergeUpTo) continue;
      const [first, second] = neighbour < leafIndex ? [neighbour, leafIndex] : [leafIndex, neighbour];
      const merged = new Int32Array(this.roomFor(neighbourCount + count));
      merged.set(this.leaves[first].subarray(0, this.counts[first]));
      merged.set(this.leaves[second].subarray(0, this.counts[second]), this.counts[first]);
      this.leaves[first] = merged;
      this.counts[first] += this.counts[second];
      this.dropLeaf(second);
      return;
    }
  }
}

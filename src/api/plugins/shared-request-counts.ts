/**
 * The per-key rate limit's count shared by the replicas (cluster mode, docs/api.md, Rate
 * limit). Writing every request to the store would cost a write per request; instead each
 * replica leases places of the key's window in batches from a record in the store (a
 * secret per key: the window and how many of its places the replicas have leased), changed
 * only by swapSecret (a resourceVersion precondition), so no place is leased twice. A
 * batch is a tenth of the limit, or a quarter of what is left of the window when that is
 * less: the writes stay few (25 a minute for a key that uses all of 1000), and as
 * the window runs out the places a replica leased but does not use shrink to one.
 */
import { createHash } from 'node:crypto';
import type { Store } from '../../store/types';

export const REQUEST_COUNT_PREFIX = 'rate-limit-';
/** Lost swaps before the replica gives up sharing this window (another replica's progress each). */
const SWAP_ATTEMPTS = 10;

export interface Lease {
  /** Places of the window this replica may now use. */
  granted: number;
  /** Places of the window no replica has leased yet, as of this lease. */
  unleased: number;
}

/** The record's name: a hash of the key's id, short enough for a Secret name. */
export const requestCountName = (key: string) => REQUEST_COUNT_PREFIX + createHash('sha256').update(key).digest('hex').slice(0, 40);

export class SharedRequestCounts {
  private readonly maxBatch: number;

  constructor(
    private readonly store: Store,
    readonly limit: number,
  ) {
    this.maxBatch = Math.max(1, Math.ceil(limit / 10));
  }

  private batchOf(left: number): number {
    return left <= 0 ? 0 : Math.min(this.maxBatch, Math.ceil(left / 4));
  }

  /** Leases a batch of the places of `key`'s window starting at `windowStart`; none when the window's are all leased. */
  async lease(team: string, key: string, windowStart: number): Promise<Lease> {
    const name = requestCountName(key);
    const window = new Date(windowStart).toISOString();
    for (let attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
      const stored = (await this.store.getSecret(team, name)) ?? (await this.store.addSecret(team, name, { window, leased: '0' }));
      // A replica whose clock runs ahead started the next window already: this one's last
      // moments are counted here alone rather than undo its count.
      if (stored.window !== undefined && stored.window > window) return { granted: this.batchOf(this.limit), unleased: 0 };
      const leased = stored.window === window ? Number(stored.leased) || 0 : 0;
      const granted = this.batchOf(this.limit - leased);
      if (granted === 0) return { granted: 0, unleased: 0 };
      if (await this.store.swapSecret(team, name, stored, { window, leased: String(leased + granted) })) {
        return { granted, unleased: this.limit - leased - granted };
      }
    }
    throw new Error('the shared request count kept changing');
  }
}

/**
 * The per-key rate limit's count shared by the replicas (docs/api.md, Rate limit). Writing
 * every request to the shared records would cost a round trip per request; instead each
 * replica leases places of the key's window in batches from one record per key and window
 * (how many of its places the replicas have leased), changed only by compare-and-swap, so
 * no place is leased twice. A batch is a tenth of the limit, or a quarter of what is left
 * of the window when that is less: the writes stay few (25 a minute for a key that uses all
 * of 1000), and as the window runs out the places a replica leased but does not use shrink
 * to one. The records expire on their own (store/nats-shared-records.ts).
 */
import { createHash } from 'node:crypto';
import { recordName, SharedRecords } from '../../store/shared-records';

export interface Lease {
  /** Places of the window this replica may now use. */
  granted: number;
  /** Places of the window no replica has leased yet, as of this lease. */
  unleased: number;
}

/** The record of a client's window: a hash of the client, so no key id is written out. */
export const requestCountName = (client: string, windowStart: number) =>
  recordName('rate', createHash('sha256').update(client).digest('hex').slice(0, 40), String(windowStart / 1000));

export class SharedRequestCounts {
  private readonly maxBatch: number;

  constructor(
    private readonly records: SharedRecords,
    readonly limit: number,
  ) {
    this.maxBatch = Math.max(1, Math.ceil(limit / 10));
  }

  private batchOf(left: number): number {
    return left <= 0 ? 0 : Math.min(this.maxBatch, Math.ceil(left / 4));
  }

  /**
   * Leases a batch of the places of `client`'s window starting at `windowStart`; none when
   * the window's are all leased. A lost swap is tried again without a cap: each loss is
   * another replica's lease of at least one place, so the window's places bound the tries.
   * (Giving up after a few used to count the window by this replica alone, which let a
   * key through up to the limit once more: contention is not an outage.)
   */
  async lease(client: string, windowStart: number): Promise<Lease> {
    const name = requestCountName(client, windowStart);
    for (;;) {
      const stored = await this.records.read(name);
      const leased = Number(stored?.data.leased) || 0;
      const granted = this.batchOf(this.limit - leased);
      if (granted === 0) return { granted: 0, unleased: 0 };
      if (await this.records.swap(name, stored, { leased: String(leased + granted) })) {
        return { granted, unleased: this.limit - leased - granted };
      }
    }
  }
}

/**
 * A set whose members expire after a while and whose size is capped, the oldest member
 * going first: a cache of answers that may turn stale and must not grow with the number
 * of distinct questions an attacker can ask.
 */
export class ExpiringSet {
  /** Member -> when it expires; a Map iterates in insertion order, so the first is the oldest. */
  private readonly expiries = new Map<string, number>();

  constructor(
    private readonly maxSize: number,
    private readonly ttlMs: number,
  ) {}

  has(member: string, now = Date.now()): boolean {
    const expiry = this.expiries.get(member);
    if (expiry === undefined) return false;
    if (expiry > now) return true;
    this.expiries.delete(member);
    return false;
  }

  /**
   * Adds (or refreshes) `member`. Every member lives `ttlMs`, so insertion order is expiry
   * order: the expired leave from the front here, and a set that is only ever added to
   * holds what the last `ttlMs` brought, not all it ever saw (up to `maxSize`).
   */
  add(member: string, now = Date.now()): void {
    this.expiries.delete(member);
    this.expiries.set(member, now + this.ttlMs);
    for (const [oldest, expiry] of this.expiries) {
      if (expiry > now && this.expiries.size <= this.maxSize) break;
      this.expiries.delete(oldest);
    }
  }

  delete(member: string): void {
    this.expiries.delete(member);
  }

  get size(): number {
    return this.expiries.size;
  }
}

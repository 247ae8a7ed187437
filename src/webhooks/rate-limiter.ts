/**
 * The per-subscription delivery rate: a token bucket holding up to a minute's worth of
 * `rate_limit_per_minute`, refilled continuously. A delivery that finds it empty waits
 * in its subscription's queue, in order; nothing is dropped.
 */
interface Bucket {
  tokens: number;
  refilledAt: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  /** `minuteMs` is 60 000 in production; the webhook time scale shrinks it in tests. */
  constructor(private readonly minuteMs: number) {}

  /** Takes a token now and returns 0, or returns how many ms until one is available. */
  take(key: string, perMinute: number, now = Date.now()): number {
    const bucket = this.buckets.get(key) ?? { tokens: perMinute, refilledAt: now };
    const msPerToken = this.minuteMs / perMinute;
    bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.refilledAt) / msPerToken);
    bucket.refilledAt = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) * msPerToken);
  }

  forget(key: string): void {
    this.buckets.delete(key);
  }
}

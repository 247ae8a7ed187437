/**
 * The per-subscription token bucket at the highest rate a subscription may ask for: it
 * starts with a minute's worth, then paces at exactly the rate, and a wait it asks for is
 * never longer than one token's time (so at high rates it never holds a delivery back
 * for longer than the rate calls for). Times are given, not measured.
 */
import { TokenBuckets } from '../../src/webhooks/rate-limiter';
import { MAX_RATE_LIMIT_PER_MINUTE } from '../../src/resources/webhook';

describe('webhook rate limiter at the cap', () => {
  const MINUTE = 60_000;

  it("starts with a minute's worth, then paces at the rate", () => {
    const buckets = new TokenBuckets(MINUTE);
    const t0 = 1_000_000;
    let taken = 0;
    while (buckets.take('w', MAX_RATE_LIMIT_PER_MINUTE, t0) === 0) taken++;
    expect(taken).toBe(MAX_RATE_LIMIT_PER_MINUTE);

    // Over the next ten seconds, exactly ten seconds' worth, at whatever moments it is asked.
    let later = 0;
    for (let ms = 1; ms <= 10_000; ms++) while (buckets.take('w', MAX_RATE_LIMIT_PER_MINUTE, t0 + ms) === 0) later++;
    expect(later).toBe(Math.floor((MAX_RATE_LIMIT_PER_MINUTE * 10_000) / MINUTE));
  });

  it('asks an empty bucket to wait no longer than one token takes', () => {
    const buckets = new TokenBuckets(MINUTE);
    const t0 = 5_000_000;
    while (buckets.take('w', MAX_RATE_LIMIT_PER_MINUTE, t0) === 0);
    const wait = buckets.take('w', MAX_RATE_LIMIT_PER_MINUTE, t0);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(Math.ceil(MINUTE / MAX_RATE_LIMIT_PER_MINUTE));
    expect(buckets.take('w', MAX_RATE_LIMIT_PER_MINUTE, t0 + wait)).toBe(0);
  });

  it('keeps subscriptions apart', () => {
    const buckets = new TokenBuckets(MINUTE);
    while (buckets.take('a', 10, 0) === 0);
    expect(buckets.take('a', 10, 0)).toBeGreaterThan(0);
    expect(buckets.take('b', 10, 0)).toBe(0);
  });
});

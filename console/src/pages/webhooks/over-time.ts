/**
 * A subscription's deliveries and their attempts, counted per stretch of time for its
 * charts: how many deliveries of each outcome were made in each stretch (by when they were
 * created), and how long the attempts made in it took (median and slowest).
 */
import type { Delivery, DeliveryAttempt, DeliveryStatus } from './types';

export const OUTCOMES: DeliveryStatus[] = ['succeeded', 'failed', 'pending'];

/** The widths a stretch may have, shortest first: the shortest that gives at most MAX_BUCKETS is taken. */
const WIDTHS_S = [10, 30, 60, 5 * 60, 15 * 60, 3600, 3 * 3600, 6 * 3600, 86_400, 7 * 86_400];
const MAX_BUCKETS = 24;

export interface Bucket {
  /** Start, in ms since the epoch (a multiple of the width). */
  start: number;
  outcomes: Record<DeliveryStatus, number>;
  /** Latencies (ms) of the attempts started in it, that had one. */
  latencies: number[];
  median: number | null;
  slowest: number | null;
}

export interface OverTime {
  widthMs: number;
  buckets: Bucket[];
}

/** The width of a stretch in words: "10 seconds", "5 minutes", "1 hour". */
export function widthInWords(widthMs: number): string {
  const s = widthMs / 1000;
  if (s % 86_400 === 0) return s === 86_400 ? '1 day' : `${s / 86_400} days`;
  if (s % 3600 === 0) return s === 3600 ? '1 hour' : `${s / 3600} hours`;
  if (s % 60 === 0) return s === 60 ? '1 minute' : `${s / 60} minutes`;
  return `${s} seconds`;
}

/** The median of some numbers (the lower middle one of an even count: a latency that was measured). */
export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * `deliveries` (any order) and each one's attempt log by delivery id, counted in stretches
 * from the first delivery's to `now`'s.
 */
export function overTime(deliveries: Delivery[], attempts: Map<string, DeliveryAttempt[]>, now: number): OverTime {
  const times = deliveries.map((d) => Date.parse(d.created_at));
  for (const log of attempts.values()) for (const a of log) times.push(Date.parse(a.at));
  const first = times.length > 0 ? Math.min(...times) : now;
  const spanS = Math.max(1, (now - first) / 1000);
  const widthS = WIDTHS_S.find((w) => Math.floor(spanS / w) + 1 <= MAX_BUCKETS) ?? WIDTHS_S[WIDTHS_S.length - 1];
  const widthMs = widthS * 1000;
  const startOf = (time: number) => Math.floor(time / widthMs) * widthMs;
  const buckets: Bucket[] = [];
  for (let start = startOf(first); start <= startOf(Math.max(now, first)); start += widthMs) {
    buckets.push({ start, outcomes: { succeeded: 0, failed: 0, pending: 0 }, latencies: [], median: null, slowest: null });
  }
  const bucketOf = (time: number) => buckets[Math.min(buckets.length - 1, Math.max(0, Math.floor((startOf(time) - buckets[0].start) / widthMs)))];
  for (const delivery of deliveries) bucketOf(Date.parse(delivery.created_at)).outcomes[delivery.status]++;
  for (const log of attempts.values()) {
    for (const attempt of log) if (attempt.latency_ms !== null) bucketOf(Date.parse(attempt.at)).latencies.push(attempt.latency_ms);
  }
  for (const bucket of buckets) {
    bucket.median = median(bucket.latencies);
    bucket.slowest = bucket.latencies.length > 0 ? Math.max(...bucket.latencies) : null;
  }
  return { widthMs, buckets };
}

/**
 * Usage records are kept CLOUDPLANE_USAGE_RETENTION_DAYS (default 400: longer than the
 * longest window GET /usage answers), then the leader deletes them, so the store does not
 * grow with every resource and day for ever: an interval once it ended that long ago, a
 * day's counts once the day is that old, a month's notices once the month is.
 */
import type { Logger } from 'pino';
import type { Store, StoredEntry } from '../store/types';
import { COUNTS_PREFIX, INTERVAL_PREFIX, intervalsOfRecord, METER_PREFIX, NOTICES_PREFIX } from './records';
import { textOf } from '../lib/unknown-values';
import { Periodic } from '../lib/periodic';

const DAY_MS = 86_400_000;

/** When a record's usage ended, or null while it may still grow. */
function endOf(record: StoredEntry): number | null {
  if (record.name.startsWith(INTERVAL_PREFIX) || record.name.startsWith(METER_PREFIX)) {
    // A meter record ends with the last of its intervals.
    let end = Date.parse(record.createdAt);
    for (const interval of intervalsOfRecord(record.name, record.data)) {
      if (!interval.ended) return null;
      end = Math.max(end, Date.parse(interval.segments.at(-1)?.to ?? record.createdAt));
    }
    return end;
  }
  if (record.name.startsWith(COUNTS_PREFIX)) return Date.parse(`${record.data.day}T00:00:00Z`) + DAY_MS;
  const month = record.name.slice(NOTICES_PREFIX.length);
  const start = new Date(`${month}-01T00:00:00Z`);
  return Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
}

export class UsageRetention {
  /** Hourly, or a tenth of a retention shorter than 10 hours (tests use seconds). */
  private readonly periodic: Periodic;

  constructor(private readonly deps: { store: Store; logger: Logger; retentionMs: number }) {
    this.periodic = new Periodic(
      Math.min(Math.max(deps.retentionMs / 10, 100), 3_600_000),
      () => this.deleteExpired(),
      (err) => {
        deps.logger.warn({ err: textOf(err) }, 'usage records not swept; the next sweep tries again');
      },
    );
  }

  start(): Promise<void> {
    this.periodic.start();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  sweep(): Promise<void> {
    return this.periodic.runNow();
  }

  private async deleteExpired(): Promise<void> {
    const { store, retentionMs } = this.deps;
    const cutoff = Date.now() - retentionMs;
    for (const prefix of [METER_PREFIX, INTERVAL_PREFIX, COUNTS_PREFIX, NOTICES_PREFIX]) {
      for (const record of await store.records.list(prefix)) {
        const end = endOf(record);
        if (end !== null && end < cutoff) await store.records.delete(record.team, record.name);
      }
    }
  }
}

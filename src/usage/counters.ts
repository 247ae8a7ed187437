/**
 * Counts of API requests and webhook deliveries per team and UTC hour, kept in this
 * process's memory (a request costs a map update, no store write) and flushed every
 * CLOUDPLANE_USAGE_FLUSH_SECONDS, and on stop, to this process's own record of the day
 * (records.ts). The record holds the process's running totals, so a flush that is
 * repeated or lost and redone writes the same numbers: no replica ever adds to another's
 * record, and the report sums the records of all processes. A process killed without a
 * stop loses what it counted since its last flush.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../store/types';
import { countsName, countsToRecord, DayCounts } from './records';
import { textOf } from '../lib/unknown-values';

interface DayEntry {
  team: string;
  day: string;
  counts: DayCounts;
  dirty: boolean;
}

/** Read through a call: a count during the write's await sets it again, which the compiler cannot see. */
const isDirty = (entry: DayEntry): boolean => entry.dirty;

/** `2026-11-24T13`: the UTC hour a count falls in. */
export const hourOf = (at: Date) => at.toISOString().slice(0, 13);
const HOUR_MS = 3_600_000;

export class UsageCounters {
  /** Names this process's records: a new one per start, so a restart never overwrites what the last run flushed. */
  readonly process = randomBytes(8).toString('hex');
  private readonly days = new Map<string, DayEntry>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly flushMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  countRequest(team: string, at = new Date()): void {
    this.add(team, at, 'requests');
  }

  countDelivery(team: string, at = new Date()): void {
    this.add(team, at, 'deliveries');
  }

  /**
   * This process's counts of a team by day, flushed or not: they supersede its stored
   * records of those days. A past day is let go once flushed; its record answers then.
   */
  own(team: string): Map<string, DayCounts> {
    return new Map([...this.days.values()].filter((entry) => entry.team === team).map((entry) => [entry.day, entry.counts]));
  }

  /** Writes every day that changed since the last flush; one flush at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeChanged());
    return this.flushing;
  }

  /** The hour last counted in, [from, to) in ms: counting costs no date formatting within it. */
  private currentHour = { from: 0, to: 0, hour: '' };

  private hourFor(at: Date): string {
    const ms = at.getTime();
    const current = this.currentHour;
    if (ms >= current.from && ms < current.to) return current.hour;
    const from = ms - (ms % HOUR_MS);
    this.currentHour = { from, to: from + HOUR_MS, hour: hourOf(at) };
    return this.currentHour.hour;
  }

  private add(team: string, at: Date, metric: keyof DayCounts): void {
    const hour = this.hourFor(at);
    const day = hour.slice(0, 10);
    const key = `${team}/${day}`;
    let entry = this.days.get(key);
    if (!entry) {
      entry = { team, day, counts: { requests: {}, deliveries: {} }, dirty: false };
      this.days.set(key, entry);
    }
    entry.counts[metric][hour] = (entry.counts[metric][hour] ?? 0) + 1;
    entry.dirty = true;
  }

  private async writeChanged(): Promise<void> {
    const today = hourOf(new Date()).slice(0, 10);
    for (const [key, entry] of this.days) {
      if (entry.dirty) {
        entry.dirty = false;
        try {
          await this.store.records.put(entry.team, countsName(this.process, entry.day), countsToRecord(this.process, entry.day, entry.counts));
        } catch (err) {
          entry.dirty = true;
          this.logger.warn({ err: textOf(err), team: entry.team }, 'usage counts not flushed; the next flush tries again');
          continue;
        }
      }
      // A past day, written: its record answers from now on.
      if (!isDirty(entry) && entry.day < today) this.days.delete(key);
    }
  }
}

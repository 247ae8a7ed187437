/**
 * The usage recorder: a durable bus consumer (like the agent's alert feed) that turns the
 * lifecycle events of metered families into usage intervals in the store. Its position on
 * the bus survives restarts; across replicas it runs on the leader, and on NATS a durable
 * consumer hands each event to one reader. The latest event applied again changes nothing
 * (metering.ts applyEvent), so at-least-once delivery meters once.
 *
 * Events are gathered for BATCH_MS and written per record (records.ts: a team's meter
 * record holds the intervals of the resources created in ten seconds), so a burst of
 * creates costs one write per record rather than one per resource. An event is finished,
 * for the bus, once its record is written; a record that cannot be written keeps its
 * events, in order, and is tried again, and later events of its resources wait behind them.
 */
import type { Logger } from 'pino';
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import type { Store } from '../store/types';
import { applyEvent, Interval, meteredSubject, MeteredFamily } from './metering';
import { INTERVAL_PREFIX, intervalFromRecord, intervalName, intervalToRecord, meterName, metersFromRecord, metersToRecord, swapUntilDone } from './records';
import { fieldOf, textOf } from '../lib/unknown-values';

export const USAGE_CONSUMER = 'usage';
/** How long events gather before their records are written: usage is read in hours, a write per record per batch. */
const BATCH_MS = 2_000;
/**
 * Events the bus may hand over at once: what one batch can hold. A full batch is written
 * at once: the bus hands no more until these are finished, so waiting out BATCH_MS would
 * cap metering at this many events per BATCH_MS (256 a second), behind any burst.
 */
export const USAGE_BATCH_EVENTS = 512;
const RETRY_MS = { base: 500, max: 30_000 };

/** An event waiting for its record's write, and the bus's handler waiting for it. */
interface Waiting {
  event: CloudEvent;
  metered: MeteredFamily;
  id: string;
  /** The record it goes to, once chosen (it stays chosen across retries). */
  record?: string;
  done(): void;
  failed(err: unknown): void;
}

class Stopping extends Error {
  constructor() {
    super('the usage recorder is stopping: the event is handed over again');
  }
}

export class IntervalRecorder {
  private unsubscribe: (() => void) | null = null;
  /** Team -> its events not yet written, oldest first. */
  private readonly waiting = new Map<string, Waiting[]>();
  private timer: NodeJS.Timeout | null = null;
  /** Whether `timer` writes at once (a full batch) rather than at the end of a window. */
  private timerAtOnce = false;
  private writing: Promise<void> = Promise.resolve();
  private failures = 0;
  /** The events in `waiting`, of every team. */
  private waitingCount = 0;

  constructor(
    private readonly bus: EventBus,
    private readonly store: Store,
    private readonly logger: Logger,
    /** How long events gather before a batch that is not full is written. */
    private readonly batchMs = BATCH_MS,
  ) {}

  start(): Promise<void> {
    if (!this.unsubscribe) this.unsubscribe = this.bus.subscribe(USAGE_CONSUMER, (event) => this.record(event), { concurrency: USAGE_BATCH_EVENTS });
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.writing;
    for (const events of this.waiting.values()) for (const waiting of events) waiting.failed(new Stopping());
    this.waiting.clear();
  }

  /** Settles when the event's record is written; throws when it cannot be (the bus hands the event over again). */
  private record(event: CloudEvent): Promise<void> {
    const subject = meteredSubject(event);
    if (!subject) return Promise.resolve();
    return new Promise((done, failed) => {
      const team = event.team_id;
      const events = this.waiting.get(team) ?? [];
      events.push({ event, metered: subject.metered, id: subject.id, done, failed });
      this.waiting.set(team, events);
      this.waitingCount++;
      this.writeSoon(this.waitingCount >= USAGE_BATCH_EVENTS && this.failures === 0 ? 0 : this.batchMs);
    });
  }

  private writeSoon(ms: number): void {
    if (!this.unsubscribe) return;
    // A batch that filled while it waited out its window is written now instead.
    if (this.timer && ms === 0 && !this.timerAtOnce) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.timer) return;
    this.timerAtOnce = ms === 0;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writing = this.writing.then(() => this.writeAll());
    }, ms);
    this.timer.unref();
  }

  private async writeAll(): Promise<void> {
    const teams = [...this.waiting];
    this.waiting.clear();
    this.waitingCount = 0;
    let failed = false;
    for (const [team, events] of teams) {
      const kept = await this.writeTeam(team, events);
      if (kept.length === 0) continue;
      failed = true;
      // Ahead of what came meanwhile: a resource's events stay in order.
      this.waiting.set(team, [...kept, ...(this.waiting.get(team) ?? [])]);
      this.waitingCount += kept.length;
    }
    this.failures = failed ? this.failures + 1 : 0;
    if (this.waiting.size > 0) {
      const full = this.waitingCount >= USAGE_BATCH_EVENTS;
      this.writeSoon(failed ? Math.min(RETRY_MS.base * 2 ** (this.failures - 1), RETRY_MS.max) : full ? 0 : this.batchMs);
    }
  }

  /** Writes a team's events, a record at a time; answers those whose record could not be written. */
  private async writeTeam(team: string, events: Waiting[]): Promise<Waiting[]> {
    const byRecord = new Map<string, Waiting[]>();
    for (const waiting of events) {
      // A resource metered before meter records goes on in its own record.
      waiting.record ??= (await this.store.records.get(team, intervalName(waiting.id))) ? intervalName(waiting.id) : meterName(createdAtOf(waiting.event));
      byRecord.set(waiting.record, [...(byRecord.get(waiting.record) ?? []), waiting]);
    }
    const kept: Waiting[] = [];
    for (const [name, inRecord] of byRecord) {
      try {
        await swapUntilDone(this.store, team, name, (current) => applied(name, current, inRecord));
        for (const waiting of inRecord) waiting.done();
        this.logger.debug({ team, record: name, events: inRecord.length }, 'usage intervals recorded');
      } catch (err) {
        this.logger.warn({ err: textOf(err), team, record: name }, 'usage intervals not recorded; they are tried again');
        kept.push(...inRecord);
      }
    }
    return kept;
  }
}

/**
 * The resource's creation time, which places it in a meter record. Every event of a
 * resource must place it alike: one without it (a record edited by hand) goes to the
 * undated records, never by the event's own time.
 */
function createdAtOf(event: CloudEvent): string {
  const createdAt = fieldOf(event.data, 'created_at');
  return typeof createdAt === 'string' ? createdAt : '';
}

/** A record with `events` applied in order; undefined when none changes it. */
function applied(name: string, current: Record<string, string> | undefined, events: Waiting[]): Record<string, string> | undefined {
  if (name.startsWith(INTERVAL_PREFIX)) {
    let interval: Interval | undefined = current && intervalFromRecord(current);
    let changed = false;
    for (const { event, metered, id } of events) {
      const next = applyEvent(interval, metered, id, event);
      if (!next) continue;
      interval = next;
      changed = true;
    }
    return changed && interval ? intervalToRecord(interval) : undefined;
  }
  const intervals = current ? metersFromRecord(current) : new Map<string, Interval>();
  let changed = false;
  for (const { event, metered, id } of events) {
    const next = applyEvent(intervals.get(id), metered, id, event);
    if (!next) continue;
    intervals.set(id, next);
    changed = true;
  }
  return changed ? metersToRecord(intervals) : undefined;
}

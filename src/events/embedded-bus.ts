/**
 * The embedded event bus: an fsynced append log of events in the data directory, and
 * durable consumers whose positions are saved beside it. Used by `make run` and tests;
 * a NATS JetStream bus implements the same interface for cluster mode.
 *
 * Every event has a sequence number: its place in the stream since the first event ever.
 * Consumer positions are sequence numbers, so they stay valid when events older than the
 * retention are dropped from the front of the log (like JetStream's max age); the log
 * then starts with a header record giving the sequence number of its first event (a log
 * without a header, from before retention, starts at 0).
 *
 * The events themselves stay in the log: the bus keeps, per event, when it was created
 * (for the retention) and its id (for de-duplication), and the texts of the newest few,
 * which is where consumers that keep up read. Older events (a consumer that fell behind,
 * a follower from a moment in the past) are read back from the file, from the page cache
 * most of the time. Held in memory, a 30-day retention was most of the heap of a large
 * installation, and every young-generation collection paused longer for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { AppendLog } from '../store/append-log';
import { DataDirHealth } from '../store/data-dir-health';
import { BackgroundWrite, DEFAULT_RETRY } from '../store/background-write';
import { eventLogBytes, eventLogEvents } from '../metrics';
import { EventBus, EventHandler, parseEvent, SubscribeOptions } from './types';
import { CloudEvent } from '../resources/cloud-event';
import { promised } from '../lib/promised';
import { isRecord } from '../lib/unknown-values';

const RETRY_DELAY_MS = 500;
/** How many of the newest events' texts are kept in memory, for the consumers that keep up. */
const RECENT_TEXTS = 1024;
/** What a reader of many events (a follower, recent()) reads back from the log at once, at most. */
const READ_BATCH_BYTES = 1 << 20;
const POSITION_SAVE_INTERVAL_MS = 200;
/**
 * The log is rewritten once expired events are a quarter of it: it then holds between one
 * and 4/3 of a retention's events, and each event is copied about three times in all.
 */
const COMPACT_FRACTION = 4;

/** The first record of a log that was compacted. */
/**
 * writeFileDurable (append-log.ts) without holding the event loop: the positions are
 * saved up to five times a second while events flow, and each synchronous fsync stopped
 * the whole process (the API, the reconcilers) for as long as the disk took.
 */
async function writeFileDurableAsync(file: string, content: string): Promise<void> {
  const tmp = `${file}.tmp`;
  try {
    const handle = await fs.promises.open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.promises.rename(tmp, file);
  } catch (err) {
    // The directory refuses this too; the next attempt overwrites the file.
    await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  const dir = await fs.promises.open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

interface LogHeader {
  header: { base: number };
}

const isHeader = (record: CloudEvent | LogHeader): record is LogHeader => 'header' in record;

/** How often expiry is checked: a tenth of the retention, within 100 ms and 10 min. */
/** The consumers' saved positions (name -> sequence number); what is no number is left out. */
function positionsOf(saved: unknown): Record<string, number> {
  const positions: Record<string, number> = {};
  if (isRecord(saved)) for (const [consumer, at] of Object.entries(saved)) if (typeof at === 'number') positions[consumer] = at;
  return positions;
}

const retentionCheckMs = (retentionMs: number) => Math.min(Math.max(retentionMs / 10, 100), 600_000);

interface Consumer {
  handler: EventHandler;
  concurrency: number;
  /** Sequence number of the next event to hand out. */
  next: number;
  /** Events in the handler now. */
  inFlight: number;
  /** Events past the saved position whose handler has finished (out of order). */
  finished: Set<number>;
  stopped: boolean;
}

export interface EmbeddedEventBusOptions {
  /** Shared with the store in the same data directory; one of its own otherwise. */
  health?: DataDirHealth;
  logger?: Logger;
  /** Events older than this are dropped from the log and from memory; kept for ever without it. */
  retentionMs?: number;
}

export class EmbeddedEventBus implements EventBus {
  private readonly log: AppendLog;
  private readonly positionsFile: string;
  /** Sequence number of the oldest event kept, the first in the log file. */
  private base = 0;
  /** Sequence number of the next event published. */
  private head = 0;
  /** When each kept event was created (epoch ms): `createdMs[i]` is that of sequence number `base + i`. */
  private createdMs: number[] = [];
  /** The texts of the newest events, at sequence number modulo RECENT_TEXTS, from `recentFrom` on. */
  private readonly recentTexts: string[] = new Array<string>(RECENT_TEXTS);
  private recentFrom = 0;
  /** Records before the first event in the log file: 1 once it has a header. */
  private headerRecords = 0;
  /** The ids of the kept events, in the order of their sequence numbers (forgetBefore relies on it). */
  private readonly ids = new Set<string>();
  private positions: Record<string, number> = {};
  private readonly consumers = new Map<string, Consumer>();
  private readonly health: DataDirHealth;
  /** Positions are saved in batches; after a crash a consumer sees the last few events again. */
  private readonly positionsWrite: BackgroundWrite;
  /** After a refused append: probes the directory until it takes writes again. */
  private readonly appendRecovery: BackgroundWrite;
  /** With a retention: the compaction that drops expired events, and how often to try it. */
  private readonly retention: { compaction: BackgroundWrite; checkMs: number } | null;
  private retentionTimer: NodeJS.Timeout | null = null;
  private readonly publishing = new Map<string, Promise<void>>();
  private readonly followers = new Set<(event: CloudEvent, text: string) => void>();

  constructor(dataDir: string, options: EmbeddedEventBusOptions = {}) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.log = new AppendLog(path.join(dataDir, 'events.log'));
    this.positionsFile = path.join(dataDir, 'events.consumers.json');
    this.health = options.health ?? new DataDirHealth(dataDir, options.logger);
    this.positionsWrite = new BackgroundWrite('events.positions', () => writeFileDurableAsync(this.positionsFile, JSON.stringify(this.positions)), this.health);
    this.appendRecovery = new BackgroundWrite(
      'events.log',
      () => {
        this.health.probe();
      },
      this.health,
    );
    const { retentionMs } = options;
    this.retention =
      retentionMs === undefined
        ? null
        : { compaction: new BackgroundWrite('events.compaction', () => this.dropExpired(retentionMs), this.health), checkMs: retentionCheckMs(retentionMs) };
  }

  start(): Promise<void> {
    return promised(() => {
      this.createdMs = [];
      for (const record of this.log.open<CloudEvent | LogHeader>()) {
        if (isHeader(record)) {
          this.base = record.header.base;
          this.headerRecords = 1;
        } else {
          this.createdMs.push(Date.parse(record.created_at));
          this.ids.add(record.id);
        }
      }
      this.head = this.base + this.createdMs.length;
      this.recentFrom = this.head;
      if (fs.existsSync(this.positionsFile)) this.positions = positionsOf(JSON.parse(fs.readFileSync(this.positionsFile, 'utf8')));
      this.updateGauges();
      if (this.retention) {
        const { compaction, checkMs } = this.retention;
        compaction.request();
        this.retentionTimer = setInterval(() => {
          compaction.request();
        }, checkMs);
        this.retentionTimer.unref();
      }
    });
  }

  async stop(): Promise<void> {
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    await this.retention?.compaction.stop();
    for (const consumer of this.consumers.values()) consumer.stopped = true;
    this.consumers.clear();
    // A last save; if the directory refuses it, consumers repeat a few events after the restart.
    await this.positionsWrite.flush();
    await this.positionsWrite.stop();
    await this.appendRecovery.stop();
    await this.log.close();
  }

  async publish(event: CloudEvent): Promise<void> {
    if (this.ids.has(event.id)) return;
    const inFlight = this.publishing.get(event.id);
    if (inFlight) return inFlight;
    const text = JSON.stringify(event);
    const done = this.log.appendJson(text, event.team_id).then(
      () => {
        this.ids.add(event.id);
        const sequence = this.head++;
        this.createdMs.push(Date.parse(event.created_at));
        this.recentTexts[sequence % RECENT_TEXTS] = text;
        this.updateGauges();
        for (const follower of this.followers) follower(event, text);
        for (const name of this.consumers.keys()) this.pump(name);
      },
      (err: unknown) => {
        // Not published: the publisher (the outbox relay) keeps the event and tries again.
        this.health.failed('events.log', err);
        this.appendRecovery.request(DEFAULT_RETRY.baseMs);
        throw err;
      },
    );
    this.publishing.set(event.id, done);
    try {
      await done;
    } finally {
      this.publishing.delete(event.id);
    }
  }

  subscribe(name: string, handler: EventHandler, { concurrency = 1 }: SubscribeOptions = {}): () => void {
    if (this.consumers.has(name)) throw new Error(`consumer ${name} is already subscribed`);
    // A consumer further behind than the retention goes on from the oldest event kept.
    const next = Math.max(this.positions[name] ?? 0, this.base);
    this.positions[name] = next;
    this.consumers.set(name, { handler, concurrency: Math.max(1, concurrency), next, inFlight: 0, finished: new Set(), stopped: false });
    this.pump(name);
    return () => {
      const consumer = this.consumers.get(name);
      if (consumer) consumer.stopped = true;
      this.consumers.delete(name);
    };
  }

  follow(since: string, handler: (event: CloudEvent, text: string) => void): () => void {
    for (const { event, text } of this.keptSince(Date.parse(since))) handler(event, text);
    this.followers.add(handler);
    return () => this.followers.delete(handler);
  }

  recent(team: string, since: string): Promise<CloudEvent[]> {
    return promised(() => {
      const events: CloudEvent[] = [];
      for (const { event } of this.keptSince(Date.parse(since))) if (event.team_id === team) events.push(event);
      return events;
    });
  }

  pending(): Promise<Record<string, number>> {
    // Past the saved position: the events not handed out or in the handler; those finished out of order are done.
    return Promise.resolve(
      Object.fromEntries([...this.consumers].map(([name, consumer]) => [name, this.head - this.positions[name] - consumer.finished.size])),
    );
  }

  /** The kept events created at or after `sinceMs`, oldest first, read from the log a megabyte at a time. */
  private *keptSince(sinceMs: number): Generator<{ event: CloudEvent; text: string }> {
    for (let from = this.base; from < this.head;) {
      const to = Math.min(this.head, this.base + this.log.recordsWithin(this.recordOf(from), READ_BATCH_BYTES) - this.headerRecords);
      const texts = this.log.readRecords(this.recordOf(from), this.recordOf(to));
      for (let i = 0; i < texts.length; i++) if (this.createdMs[from + i - this.base] >= sinceMs) yield { event: parseEvent(texts[i]), text: texts[i] };
      from = to;
    }
  }

  /** The text of a kept event: from memory if it is among the newest, from the log otherwise. */
  private textOf(sequence: number): string {
    if (sequence >= this.recentFrom && sequence >= this.head - RECENT_TEXTS) return this.recentTexts[sequence % RECENT_TEXTS];
    const record = this.recordOf(sequence);
    return this.log.readRecords(record, record + 1)[0];
  }

  /** The place in the log file of the event with a sequence number. */
  private recordOf(sequence: number): number {
    return this.headerRecords + sequence - this.base;
  }

  /** Hands the consumer the events past its position, up to its concurrency at once. */
  private pump(name: string): void {
    const consumer = this.consumers.get(name);
    if (!consumer) return;
    while (!consumer.stopped && consumer.inFlight < consumer.concurrency && consumer.next < this.head) {
      consumer.inFlight++;
      void this.handOut(name, consumer, consumer.next++);
    }
  }

  /** Runs the handler on one event until it succeeds, then moves the position on if it can. */
  private async handOut(name: string, consumer: Consumer, sequence: number): Promise<void> {
    let event: CloudEvent | undefined;
    while (!consumer.stopped) {
      // An event that expired before it could be read (the log refused reads) went with the rest of its retention.
      if (!event && sequence < this.base) break;
      try {
        // Parsed for each consumer: a handler may keep or change what it is given.
        event ??= parseEvent(this.textOf(sequence));
        await consumer.handler(event);
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      }
    }
    consumer.inFlight--;
    // A consumer unsubscribed (or stopped) meanwhile no longer owns the position: a new
    // subscriber of the name may be at this event already, and moving the position on
    // from here would make it skip the next one. The event is handed out again instead.
    if (consumer.stopped) return;
    // The saved position only passes events that are all done, so a crash repeats the
    // unfinished ones (and perhaps a few finished out of order), never skips one. (An
    // event that expired while in the handler is behind the position already.)
    if (sequence >= this.base) consumer.finished.add(sequence);
    let position = this.positions[name];
    while (consumer.finished.delete(position)) position++;
    if (position !== this.positions[name]) {
      this.positions[name] = position;
      this.positionsWrite.request(POSITION_SAVE_INTERVAL_MS);
    }
    this.pump(name);
  }

  /**
   * Drops the events older than the retention from the front of the log and from memory,
   * once they are a quarter of it (an event published late with an older `created_at`
   * waits for those before it). Appends go on meanwhile; see AppendLog.rewrite.
   */
  private async dropExpired(retentionMs: number): Promise<void> {
    const cutoff = Date.now() - retentionMs;
    let expired = 0;
    while (expired < this.createdMs.length && this.createdMs[expired] < cutoff) expired++;
    if (expired === 0 || expired * COMPACT_FRACTION < this.createdMs.length) return;
    const base = this.base + expired;
    const header: LogHeader = { header: { base } };
    await this.log.rewrite(this.headerRecords + expired, header, () => {
      this.forgetBefore(base);
    });
  }

  /** Forgets the events before sequence number `base`, which the log no longer holds. */
  private forgetBefore(base: number): void {
    // The ids were added in the order of the sequence numbers, one per event: the first are the forgotten ones.
    let forgotten = base - this.base;
    for (const id of this.ids) {
      if (forgotten-- === 0) break;
      this.ids.delete(id);
    }
    this.createdMs = this.createdMs.slice(base - this.base);
    this.base = base;
    this.headerRecords = 1;
    let moved = false;
    for (const [name, position] of Object.entries(this.positions)) {
      if (position >= base) continue;
      this.positions[name] = base;
      moved = true;
    }
    for (const consumer of this.consumers.values()) {
      consumer.next = Math.max(consumer.next, base);
      for (const sequence of consumer.finished) if (sequence < base) consumer.finished.delete(sequence);
    }
    if (moved) this.positionsWrite.request(POSITION_SAVE_INTERVAL_MS);
    this.updateGauges();
    for (const name of this.consumers.keys()) this.pump(name);
  }

  private updateGauges(): void {
    eventLogEvents.set(this.createdMs.length);
    eventLogBytes.set(this.log.size);
  }
}

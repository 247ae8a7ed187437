/**
 * The embedded event bus: an fsynced append log of events in the data directory, and
 * durable consumers whose positions are saved beside it. Used by `make run` and tests;
 * a NATS JetStream bus implements the same interface for cluster mode.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { AppendLog, writeFileDurable } from '../store/append-log';
import { DataDirHealth } from '../store/data-dir-health';
import { BackgroundWrite, DEFAULT_RETRY } from '../store/background-write';
import { CloudEvent, EventBus, EventHandler, SubscribeOptions } from './types';

const RETRY_DELAY_MS = 500;
const POSITION_SAVE_INTERVAL_MS = 200;

interface Consumer {
  handler: EventHandler;
  concurrency: number;
  /** Index of the next event to hand out. */
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
}

export class EmbeddedEventBus implements EventBus {
  private readonly log: AppendLog;
  private readonly positionsFile: string;
  private events: CloudEvent[] = [];
  private readonly ids = new Set<string>();
  private positions: Record<string, number> = {};
  private readonly consumers = new Map<string, Consumer>();
  private readonly health: DataDirHealth;
  /** Positions are saved in batches; after a crash a consumer sees the last few events again. */
  private readonly positionsWrite: BackgroundWrite;
  /** After a refused append: probes the directory until it takes writes again. */
  private readonly appendRecovery: BackgroundWrite;
  private readonly publishing = new Map<string, Promise<void>>();
  private readonly followers = new Set<(event: CloudEvent) => void>();

  constructor(dataDir: string, options: EmbeddedEventBusOptions = {}) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.log = new AppendLog(path.join(dataDir, 'events.log'));
    this.positionsFile = path.join(dataDir, 'events.consumers.json');
    this.health = options.health ?? new DataDirHealth(dataDir, options.logger);
    this.positionsWrite = new BackgroundWrite('events.positions', () => writeFileDurable(this.positionsFile, JSON.stringify(this.positions)), this.health);
    this.appendRecovery = new BackgroundWrite('events.log', () => this.health.probe(), this.health);
  }

  async start(): Promise<void> {
    this.events = this.log.open<CloudEvent>();
    for (const event of this.events) this.ids.add(event.id);
    if (fs.existsSync(this.positionsFile)) this.positions = JSON.parse(fs.readFileSync(this.positionsFile, 'utf8'));
  }

  async stop(): Promise<void> {
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
    const done = this.log.append(event).then(
      () => {
        this.ids.add(event.id);
        this.events.push(event);
        for (const follower of this.followers) follower(event);
        for (const name of this.consumers.keys()) this.pump(name);
      },
      (err: Error) => {
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
    const next = this.positions[name] ?? 0;
    this.consumers.set(name, { handler, concurrency: Math.max(1, concurrency), next, inFlight: 0, finished: new Set(), stopped: false });
    this.pump(name);
    return () => {
      const consumer = this.consumers.get(name);
      if (consumer) consumer.stopped = true;
      this.consumers.delete(name);
    };
  }

  follow(since: string, handler: (event: CloudEvent) => void): () => void {
    for (const event of this.events) if (event.created_at >= since) handler(event);
    this.followers.add(handler);
    return () => this.followers.delete(handler);
  }

  async recent(team: string, since: string): Promise<CloudEvent[]> {
    return this.events.filter((e) => e.team_id === team && e.created_at >= since);
  }

  /** Hands the consumer the events past its position, up to its concurrency at once. */
  private pump(name: string): void {
    const consumer = this.consumers.get(name);
    if (!consumer) return;
    while (!consumer.stopped && consumer.inFlight < consumer.concurrency && consumer.next < this.events.length) {
      consumer.inFlight++;
      void this.handOut(name, consumer, consumer.next++);
    }
  }

  /** Runs the handler on one event until it succeeds, then moves the position on if it can. */
  private async handOut(name: string, consumer: Consumer, index: number): Promise<void> {
    const event = this.events[index];
    while (!consumer.stopped) {
      try {
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
    // unfinished ones (and perhaps a few finished out of order), never skips one.
    consumer.finished.add(index);
    let position = this.positions[name] ?? 0;
    while (consumer.finished.delete(position)) position++;
    if (position !== (this.positions[name] ?? 0)) {
      this.positions[name] = position;
      this.positionsWrite.request(POSITION_SAVE_INTERVAL_MS);
    }
    this.pump(name);
  }
}

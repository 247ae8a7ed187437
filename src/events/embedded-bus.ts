/**
 * The embedded event bus: an fsynced append log of events in the data directory, and
 * durable consumers whose positions are saved beside it. Used by `make run` and tests;
 * a NATS JetStream bus implements the same interface for cluster mode.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AppendLog, writeFileDurable } from '../store/append-log';
import { CloudEvent, EventBus, EventHandler } from './types';

const RETRY_DELAY_MS = 500;
const POSITION_SAVE_INTERVAL_MS = 200;

interface Consumer {
  handler: EventHandler;
  running: boolean;
  stopped: boolean;
}

export class EmbeddedEventBus implements EventBus {
  private readonly log: AppendLog;
  private readonly positionsFile: string;
  private events: CloudEvent[] = [];
  private readonly ids = new Set<string>();
  private positions: Record<string, number> = {};
  private readonly consumers = new Map<string, Consumer>();
  private savePositionsTimer: NodeJS.Timeout | null = null;
  private readonly publishing = new Map<string, Promise<void>>();
  private readonly followers = new Set<(event: CloudEvent) => void>();

  constructor(dataDir: string) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.log = new AppendLog(path.join(dataDir, 'events.log'));
    this.positionsFile = path.join(dataDir, 'events.consumers.json');
  }

  async start(): Promise<void> {
    this.events = this.log.open<CloudEvent>();
    for (const event of this.events) this.ids.add(event.id);
    if (fs.existsSync(this.positionsFile)) this.positions = JSON.parse(fs.readFileSync(this.positionsFile, 'utf8'));
  }

  async stop(): Promise<void> {
    for (const consumer of this.consumers.values()) consumer.stopped = true;
    this.consumers.clear();
    if (this.savePositionsTimer) clearTimeout(this.savePositionsTimer);
    this.savePositions();
    await this.log.close();
  }

  async publish(event: CloudEvent): Promise<void> {
    if (this.ids.has(event.id)) return;
    const inFlight = this.publishing.get(event.id);
    if (inFlight) return inFlight;
    const done = this.log.append(event).then(() => {
      this.ids.add(event.id);
      this.events.push(event);
      for (const follower of this.followers) follower(event);
      for (const name of this.consumers.keys()) this.pump(name);
    });
    this.publishing.set(event.id, done);
    try {
      await done;
    } finally {
      this.publishing.delete(event.id);
    }
  }

  subscribe(name: string, handler: EventHandler): () => void {
    if (this.consumers.has(name)) throw new Error(`consumer ${name} is already subscribed`);
    this.consumers.set(name, { handler, running: false, stopped: false });
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

  /** Hands the consumer every event past its position, one at a time, in order. */
  private async pump(name: string): Promise<void> {
    const consumer = this.consumers.get(name);
    if (!consumer || consumer.running) return;
    consumer.running = true;
    try {
      while (!consumer.stopped && (this.positions[name] ?? 0) < this.events.length) {
        const event = this.events[this.positions[name] ?? 0];
        try {
          await consumer.handler(event);
        } catch {
          await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
          continue;
        }
        // A consumer unsubscribed (or stopped) meanwhile no longer owns the position: a new
        // subscriber of the name may be at this event already, and moving the position on
        // from here would make it skip the next one. The event is handed out again instead.
        if (consumer.stopped) break;
        this.positions[name] = (this.positions[name] ?? 0) + 1;
        this.scheduleSavePositions();
      }
    } finally {
      consumer.running = false;
    }
  }

  /** Positions are saved in batches; after a crash a consumer sees the last few events again. */
  private scheduleSavePositions(): void {
    if (this.savePositionsTimer) return;
    this.savePositionsTimer = setTimeout(() => {
      this.savePositionsTimer = null;
      this.savePositions();
    }, POSITION_SAVE_INTERVAL_MS);
  }

  private savePositions(): void {
    writeFileDurable(this.positionsFile, JSON.stringify(this.positions));
  }
}

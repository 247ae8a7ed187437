/**
 * The NATS JetStream event bus of cluster mode. One stream holds every event under
 * `<prefix>.<team>.<type>`, so a consumer can filter by team and type with subject
 * wildcards. Publishing sets the event id as the message id: JetStream drops a second
 * publish of the same id within the duplicate window, which is what makes the outbox
 * relay's retry after a crash harmless. Each `subscribe` name is a durable consumer
 * whose acknowledged position survives restarts of the service and of nats-server.
 */
import type { Logger } from 'pino';
import {
  AckPolicy,
  connect,
  type ConsumerMessages,
  DeliverPolicy,
  JetStreamClient,
  JetStreamManager,
  JSONCodec,
  JsMsg,
  nanos,
  NatsConnection,
  RetentionPolicy,
  StorageType,
} from 'nats';
import { parseEvent, type EventBus, type EventHandler, type SubscribeOptions } from './types';
import type { CloudEvent } from '../resources/cloud-event';
import { backoffMs } from '../lib/backoff';
import { fieldOf, messageOf } from '../lib/unknown-values';

export interface NatsBusOptions {
  servers: string[];
  stream: string;
  subjectPrefix: string;
  /** How long JetStream remembers event ids to drop re-publishes. */
  duplicateWindowMs: number;
  /** How long the stream keeps events. */
  maxAgeMs: number;
  logger: Logger;
}

const codec = JSONCodec<CloudEvent>();
/** Followers' loops are kept beside the durable consumers' (by name), under keys of their own. */
const FOLLOWER_KEY_PREFIX = 'follow:';
const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 30_000;
/**
 * Unacknowledged messages come back after this; the handler in progress extends it. It is
 * also how long the events a crashed instance had taken but not handled wait before they
 * are handed out again, so it is short.
 */
const ACK_WAIT_MS = 5_000;
/**
 * Events pulled ahead of the handler. Their ack wait runs while they wait in the buffer, so
 * the buffer must be handled well within ACK_WAIT_MS or they would be handed out twice.
 */
const PULL_BATCH = 32;
const RECONNECT_PAUSE_MS = 1_000;

/** Subject tokens may not hold `.`, `*`, `>` or whitespace; team ids never do, but guard anyway. */
const token = (value: string) => value.replace(/[.*>\s]/g, '_');

export class NatsEventBus implements EventBus {
  private nc: NatsConnection | null = null;
  private js: JetStreamClient | null = null;
  private jsm: JetStreamManager | null = null;
  private readonly loops = new Map<string, { stop: () => void; done: Promise<void> }>();

  constructor(private readonly o: NatsBusOptions) {}

  async start(): Promise<void> {
    this.nc = await connect({ servers: this.o.servers, name: 'cloudplane', maxReconnectAttempts: -1, reconnectTimeWait: 500 });
    this.jsm = await this.nc.jetstreamManager();
    this.js = this.nc.jetstream();
    await this.ensureStream();
  }

  async stop(): Promise<void> {
    for (const loop of this.loops.values()) loop.stop();
    await Promise.all([...this.loops.values()].map((l) => l.done));
    this.loops.clear();
    if (this.nc) await this.nc.drain().catch(() => this.nc?.close());
    this.nc = null;
  }

  /** Whether the connection to nats-server is up (for /readyz and meta). */
  connected(): boolean {
    return Boolean(this.nc && !this.nc.isClosed() && this.nc.info);
  }

  async publish(event: CloudEvent): Promise<void> {
    const subject = `${this.o.subjectPrefix}.${token(event.team_id)}.${event.type}`;
    await this.client().publish(subject, codec.encode(event), { msgID: event.id, expect: { streamName: this.o.stream } });
  }

  subscribe(name: string, handler: EventHandler, { concurrency = 1 }: SubscribeOptions = {}): () => void {
    if (this.loops.has(name)) throw new Error(`consumer ${name} is already subscribed`);
    const limit = Math.max(1, concurrency);
    let stopped = false;
    // Read through a call: stop() sets it while a loop awaits, which the compiler cannot see.
    const isStopped = () => stopped;
    let current: ConsumerMessages | null = null;
    const active = new Set<Promise<void>>();
    const done = (async () => {
      while (!isStopped()) {
        try {
          const consumer = await this.ensureConsumer(name);
          const messages = await consumer.consume({ max_messages: Math.max(PULL_BATCH, limit) });
          current = messages;
          for await (const message of messages) {
            // Pulled but not handled: back to the stream at once, not after the ack wait.
            if (isStopped()) {
              message.nak();
              continue;
            }
            const handling: Promise<void> = this.handle(message, handler, isStopped)
              .catch((err: unknown) => {
                this.o.logger.warn({ err, consumer: name }, 'event could not be acknowledged; it will come again');
              })
              .finally(() => active.delete(handling));
            active.add(handling);
            if (active.size >= limit) await Promise.race(active);
          }
        } catch (err) {
          if (!isStopped()) this.o.logger.warn({ err, consumer: name }, 'event consumer interrupted; resuming');
        }
        // The handlers still running finish (or hand their event back) before a new pull.
        await Promise.allSettled([...active]);
        if (!isStopped()) await sleep(RECONNECT_PAUSE_MS);
      }
    })();
    this.loops.set(name, {
      stop: () => {
        stopped = true;
        void current?.close();
      },
      done,
    });
    return () => {
      this.loops.get(name)?.stop();
      this.loops.delete(name);
    };
  }

  async pending(): Promise<Record<string, number>> {
    const jsm = this.manager();
    const lags = await Promise.all(
      [...this.loops.keys()]
        .filter((name) => !name.startsWith(FOLLOWER_KEY_PREFIX))
        .map(async (name) => {
          const info = await jsm.consumers.info(this.o.stream, token(name));
          return [name, info.num_pending + info.num_ack_pending] as const;
        }),
    );
    return Object.fromEntries(lags);
  }

  follow(since: string, handler: (event: CloudEvent, text: string) => void): () => void {
    let stopped = false;
    // Read through a call: stop() sets it while a loop awaits, which the compiler cannot see.
    const isStopped = () => stopped;
    let current: ConsumerMessages | null = null;
    let position: { seq: number } | null = null;
    const done = (async () => {
      while (!isStopped()) {
        try {
          // An ordered consumer: no server-side state, restarted from the last sequence seen.
          const consumer = await this.client().consumers.get(this.o.stream, {
            filterSubjects: `${this.o.subjectPrefix}.>`, // a string: nats-server 2.9 knows only filter_subject
            ...(position
              ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: position.seq + 1 }
              : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since }),
          });
          const messages = await consumer.consume();
          current = messages;
          for await (const message of messages) {
            if (isStopped()) break;
            position = { seq: message.seq };
            const text = message.string();
            handler(parseEvent(text), text);
          }
        } catch (err) {
          if (!isStopped()) this.o.logger.warn({ err }, 'event follower interrupted; resuming');
        }
        if (!isStopped()) await sleep(RECONNECT_PAUSE_MS);
      }
    })();
    const key = `${FOLLOWER_KEY_PREFIX}${Math.random()}`;
    this.loops.set(key, {
      stop: () => {
        stopped = true;
        void current?.close();
      },
      done,
    });
    return () => {
      this.loops.get(key)?.stop();
      this.loops.delete(key);
    };
  }

  /** Events of a team since a time, oldest first, read with a short-lived consumer. */
  async recent(team: string, since: string): Promise<CloudEvent[]> {
    const jsm = this.manager();
    const info = await jsm.consumers.add(this.o.stream, {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: since,
      filter_subject: `${this.o.subjectPrefix}.${token(team)}.>`,
      inactive_threshold: nanos(30_000),
      mem_storage: true,
    });
    const events: CloudEvent[] = [];
    try {
      let remaining = info.num_pending;
      const consumer = await this.client().consumers.get(this.o.stream, info.name);
      while (remaining > 0) {
        const batch = await consumer.fetch({ max_messages: Math.min(remaining, 1000), expires: 5_000 });
        let got = 0;
        for await (const message of batch) {
          events.push(codec.decode(message.data));
          got++;
        }
        if (got === 0) break;
        remaining -= got;
      }
    } finally {
      await jsm.consumers.delete(this.o.stream, info.name).catch(() => undefined);
    }
    return events;
  }

  /**
   * Runs the handler until it succeeds, retrying in place with backoff so a failing event
   * holds up the ones after it (with concurrency 1; the embedded bus does the same), then
   * acknowledges.
   */
  private async handle(message: JsMsg, handler: EventHandler, isStopped: () => boolean): Promise<void> {
    const event = codec.decode(message.data);
    for (let attempt = 0; !isStopped(); attempt++) {
      const keepAlive = setInterval(() => {
        message.working();
      }, ACK_WAIT_MS / 3);
      try {
        await handler(event);
        message.ack();
        return;
      } catch (err) {
        this.o.logger.warn({ err, eventId: event.id, type: event.type, attempt }, 'event handler failed; retrying');
        await sleep(backoffMs(attempt, RETRY_BASE_MS, RETRY_MAX_MS));
      } finally {
        clearInterval(keepAlive);
      }
    }
    // Stopping mid-retry: hand the event back at once for the next subscriber.
    message.nak();
  }

  private async ensureStream(): Promise<void> {
    const jsm = this.manager();
    const config = {
      name: this.o.stream,
      subjects: [`${this.o.subjectPrefix}.>`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(this.o.duplicateWindowMs),
      max_age: nanos(this.o.maxAgeMs),
    };
    try {
      await jsm.streams.info(this.o.stream);
      await jsm.streams.update(this.o.stream, config);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await jsm.streams.add(config);
    }
  }

  private async ensureConsumer(name: string) {
    const jsm = this.manager();
    const durable = token(name);
    try {
      const info = await jsm.consumers.info(this.o.stream, durable);
      // A consumer made by an earlier version keeps its ack wait until it is updated.
      if (info.config.ack_wait !== nanos(ACK_WAIT_MS)) await jsm.consumers.update(this.o.stream, durable, { ack_wait: nanos(ACK_WAIT_MS) });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await jsm.consumers.add(this.o.stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: `${this.o.subjectPrefix}.>`,
        ack_wait: nanos(ACK_WAIT_MS),
        // Unlimited redelivery: an event is never dropped for having been retried.
        max_deliver: -1,
        max_ack_pending: 1000,
      });
    }
    return this.client().consumers.get(this.o.stream, durable);
  }

  private client(): JetStreamClient {
    if (!this.js) throw new Error('the NATS event bus is not started');
    return this.js;
  }

  private manager(): JetStreamManager {
    if (!this.jsm) throw new Error('the NATS event bus is not started');
    return this.jsm;
  }
}

function isNotFound(err: unknown): boolean {
  const apiCode = fieldOf(fieldOf(err, 'api_error'), 'err_code');
  return apiCode === 10059 || apiCode === 10014 || fieldOf(err, 'code') === '404' || /not found/i.test(messageOf(err) ?? '');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

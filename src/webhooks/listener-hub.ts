/**
 * The streams of `cloudplane listen` held by this replica, and the attempts of their
 * listeners' deliveries. Every replica has one (the stream may reach any of them); the
 * dispatcher on the leader makes the deliveries as for any subscription and hands each
 * listener delivery over (dispatcher.ts), and the replica holding the listener's stream
 * makes its attempts: when one is due (the store's watch shows every replica the same
 * records), it is signed here exactly as an HTTP attempt would be and pushed to the CLI,
 * which POSTs it to its local receiver and reports the answer (POST .../answer, to any
 * replica). The outcome goes into the delivery record with the normal retry schedule; an
 * answer that does not come in time is a failed attempt.
 *
 * Deliveries that fall due while no stream is attached wait for the CLI to come back
 * within the lease; once it lapses the listener is deleted and they end `failed`. Two
 * streams of one listener for a moment (a reconnect reaching another replica before the
 * old one noticed) may both push a delivery: the record keeps one outcome per attempt
 * (outcome.ts), and the receiver drops the duplicate by its `webhook-id`, as for any retry.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store, WatchEvent } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import type { WebhookConfig } from '../config';
import { Delivery, deliveryFamily, Webhook, webhookFamily } from '../resources/webhook';
import { deliveryHeaders } from './signing';
import { signingSecrets } from './secrets';
import { postHeaders } from './sender';
import { recordAttempt } from './outcome';
import { claimLease, renewLease } from './listener';
import { isDelivery, isWebhook } from './watched';
import { listedObjects } from '../store/listed';
import { textOf } from '../lib/unknown-values';

/** Deliveries pushed to one CLI and not answered yet; more wait their turn. */
const MAX_IN_FLIGHT = 16;
/** Beyond the receiver's own timeout, for the answer to travel back through the CLI. */
const ANSWER_GRACE_MS = 5_000;
/** After a push the store failed. */
const PUSH_RETRY_MS = 1_000;
/** Node timers overflow past ~24.8 days; later attempts are re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Where a stream's messages go: server-sent events on the CLI's connection. */
export interface StreamSink {
  send(event: string, data: unknown, id?: string): void;
  /** A comment line, which keeps proxies from closing an idle stream. */
  keepAlive(): void;
  /** Says why with a last `closed` event, and ends the connection. */
  end(reason: string): void;
}

export interface ListenerHubDeps {
  store: Store;
  writer: ResourceWriter;
  config: WebhookConfig;
  logger: Logger;
}

/** One pushed attempt awaiting the CLI's answer. */
interface Flight {
  attempt: number;
  timer: NodeJS.Timeout;
}

const keyOf = (team: string, id: string) => `${team}/${id}`;

export class ListenerHub {
  private readonly streams = new Map<string, ListenerStream>();
  private unwatch: (() => void) | null = null;

  constructor(private readonly deps: ListenerHubDeps) {}

  /** Starts pushing `listener`'s deliveries to `sink`; a stream of it held here before is ended. */
  async attach(listener: Webhook, sink: StreamSink): Promise<ListenerStream> {
    const name = keyOf(listener.meta.team, listener.meta.id);
    // Before watching: ending the last stream stops the watch.
    this.streams.get(name)?.end('another connection took this listener over');
    this.unwatch ??= this.deps.store.watch((event) => {
      this.onStoreChange(event);
    });
    const stream = new ListenerStream(this.deps, listener, sink, () => {
      this.forget(name, stream);
    });
    this.streams.set(name, stream);
    await stream.start();
    return stream;
  }

  /** Ends every stream (shutdown): each CLI reconnects, to another replica if there is one. */
  close(): void {
    for (const stream of [...this.streams.values()]) stream.end('the service is shutting down');
  }

  private forget(name: string, stream: ListenerStream): void {
    if (this.streams.get(name) === stream) this.streams.delete(name);
    if (this.streams.size === 0) {
      this.unwatch?.();
      this.unwatch = null;
    }
  }

  private onStoreChange({ type, object }: WatchEvent): void {
    if (type === 'deleted') return;
    if (isDelivery(object)) {
      this.streams.get(keyOf(object.meta.team, object.spec.webhook_id))?.schedule(object);
    } else if (isWebhook(object) && object.status.status === 'deleted') {
      this.streams.get(keyOf(object.meta.team, object.meta.id))?.end('the listener was deleted');
    }
  }
}

export class ListenerStream {
  private readonly holder = randomUUID();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Map<string, Flight>();
  /** Being read and signed: not pushed twice meanwhile. */
  private readonly starting = new Set<string>();
  /** Due while MAX_IN_FLIGHT were out. */
  private readonly waiting: string[] = [];
  private renewal: NodeJS.Timeout | null = null;
  private ended = false;

  constructor(
    private readonly deps: ListenerHubDeps,
    private readonly listener: Webhook,
    private readonly sink: StreamSink,
    private readonly onEnd: () => void,
  ) {}

  private get team() {
    return this.listener.meta.team;
  }

  private get id() {
    return this.listener.meta.id;
  }

  async start(): Promise<void> {
    const { store, config } = this.deps;
    await claimLease(store, this.team, this.id, this.holder, config.listenerLeaseMs);
    this.sink.send('ready', { listener_id: this.id, lease_seconds: config.listenerLeaseMs / 1000 });
    this.renewal = setInterval(() => void this.renew(), Math.max(100, Math.floor(config.listenerLeaseMs / 3)));
    for await (const delivery of listedObjects<Delivery['spec'], Delivery['status']>(store, deliveryFamily.kind, this.team, { where: { webhook_id: this.id } }))
      this.schedule(delivery);
  }

  /** Read through a call after an await: end() may have run meanwhile, which the compiler cannot see. */
  private hasEnded(): boolean {
    return this.ended;
  }

  end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    if (this.renewal) clearInterval(this.renewal);
    for (const timer of this.timers.values()) clearTimeout(timer);
    for (const { timer } of this.inFlight.values()) clearTimeout(timer);
    this.timers.clear();
    this.inFlight.clear();
    this.waiting.length = 0;
    this.sink.end(reason);
    this.onEnd();
  }

  /** A delivery record of this listener changed (or was found at start): arm its next push. */
  schedule(delivery: Delivery): void {
    if (this.ended) return;
    const id = delivery.meta.id;
    const flight = this.inFlight.get(id);
    if (flight) {
      // Still waiting for the answer to the attempt pushed.
      if (delivery.status.status === 'pending' && delivery.status.attempt < flight.attempt) return;
      clearTimeout(flight.timer);
      this.inFlight.delete(id);
      this.pushWaiting();
    }
    const armed = this.timers.get(id);
    if (armed) clearTimeout(armed);
    this.timers.delete(id);
    if (delivery.status.status !== 'pending' || !delivery.status.next_retry_at) return;
    const due = Date.parse(delivery.status.next_retry_at);
    const timer = setTimeout(
      () => {
        this.timers.delete(id);
        this.pushOrRetry(id);
      },
      Math.min(Math.max(0, due - Date.now()), MAX_TIMER_MS),
    );
    this.timers.set(id, timer);
  }

  private pushWaiting(): void {
    while (this.inFlight.size + this.starting.size < MAX_IN_FLIGHT) {
      const next = this.waiting.shift();
      if (next === undefined) return;
      this.pushOrRetry(next);
    }
  }

  /** A push the store failed (reading the record or the secret) is tried again shortly, not left until the record changes. */
  private pushOrRetry(id: string): void {
    this.push(id).catch((err: unknown) => {
      this.deps.logger.error({ delivery_id: id, err: textOf(err), retry_in_ms: PUSH_RETRY_MS }, 'a listener delivery could not be pushed');
      if (this.ended || this.timers.has(id)) return;
      this.timers.set(
        id,
        setTimeout(() => {
          this.timers.delete(id);
          this.pushOrRetry(id);
        }, PUSH_RETRY_MS),
      );
    });
  }

  /** Signs the delivery as an HTTP attempt would be and sends it to the CLI. */
  private async push(id: string): Promise<void> {
    if (this.ended || this.inFlight.has(id) || this.starting.has(id)) return;
    if (this.inFlight.size + this.starting.size >= MAX_IN_FLIGHT) {
      if (!this.waiting.includes(id)) this.waiting.push(id);
      return;
    }
    const { store, config } = this.deps;
    this.starting.add(id);
    try {
      const delivery = await store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, this.team, id);
      if (!delivery || this.hasEnded()) return;
      if (delivery.status.status !== 'pending' || !delivery.status.next_retry_at || Date.parse(delivery.status.next_retry_at) > Date.now()) {
        this.schedule(delivery);
        return;
      }
      const startedAt = Date.now();
      const attempt = delivery.status.attempt + 1;
      const secrets = await signingSecrets(store, this.team, this.id, startedAt);
      const signed = deliveryHeaders(secrets, { id, eventType: delivery.spec.event_type, body: delivery.spec.body }, Math.floor(startedAt / 1000));
      const timer = setTimeout(() => void this.noAnswer(delivery, startedAt), config.timeoutMs + ANSWER_GRACE_MS);
      this.inFlight.set(id, { attempt, timer });
      this.sink.send(
        'delivery',
        {
          delivery_id: id,
          attempt,
          event_type: delivery.spec.event_type,
          timeout_ms: config.timeoutMs,
          headers: postHeaders({ ...signed }, delivery.spec.body),
          body: delivery.spec.body,
        },
        id,
      );
    } finally {
      this.starting.delete(id);
    }
  }

  /** The CLI did not report in time: a failed attempt, retried on the schedule. */
  private async noAnswer(delivery: Delivery, startedAt: number): Promise<void> {
    const { writer, store, config, logger } = this.deps;
    const seconds = (config.timeoutMs + ANSWER_GRACE_MS) / 1000;
    try {
      await recordAttempt(writer, config, delivery, { ok: false, status: null, error: `the listener reported no answer within ${seconds} s` }, startedAt);
      const latest = await store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, this.team, delivery.meta.id);
      if (latest) this.schedule(latest);
    } catch (err) {
      logger.error({ delivery_id: delivery.meta.id, err: textOf(err) }, 'a listener attempt without answer could not be recorded');
    }
  }

  private async renew(): Promise<void> {
    const { store, config, logger } = this.deps;
    try {
      const webhook = await store.get<Webhook['spec'], Webhook['status']>(webhookFamily.kind, this.team, this.id);
      if (!webhook || webhook.status.status === 'deleted') {
        this.end('the listener was deleted');
        return;
      }
      if ((await renewLease(store, this.team, this.id, this.holder, config.listenerLeaseMs)) === 'lost') {
        this.end('another connection took this listener over');
        return;
      }
      this.sink.keepAlive();
    } catch (err) {
      // The store failed this once; the next renewal tries again within the lease.
      logger.warn({ webhook_id: this.id, err: textOf(err) }, 'a listener lease could not be renewed');
    }
  }
}

/**
 * Outbound webhooks. A durable bus consumer turns each event into one delivery record per
 * active matching subscription of the event's team; a scheduler sends every pending
 * delivery when it is due, signed, and records the outcome and the next attempt.
 *
 * The store is the schedule: deliveries are found at start and through the store's watch
 * (a manual retry or a re-enabled subscription is a store write), so a restart resumes
 * exactly where the records say. A delivery's id is derived from (subscription, event),
 * so an event handed over again after a crash finds its delivery instead of doubling it.
 */
import type { Logger } from 'pino';
import { AlreadyExistsError, Store, WatchEvent } from '../store/types';
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import type { ResourceWriter } from '../resources/writer';
import type { WebhookConfig } from '../config';
import { Delivery, deliveryFamily, deliveryIdFor, Webhook, webhookFamily } from '../resources/webhook';
import { subscriptionMatches } from './matching';
import { deliveryHeaders } from './signing';
import { sendDelivery, AttemptResult } from './sender';
import { DeliveryConnections } from './connections';
import { DELIVERY_FAILED, finishAttempt, recordAttempt } from './outcome';
import { isListener } from './listener';
import { isDelivery, isWebhook } from './watched';
import { signingSecrets } from './secrets';
import { TokenBuckets } from './rate-limiter';
import { FairScheduler } from './fair-scheduler';
import { OwnerNotifier } from './notifier';
import { backoffMs } from '../lib/backoff';
import { BACKGROUND_TURN_BUDGET_MS, takeTurn } from '../lib/event-loop-turns';
import { eachObject, listedObjects } from '../store/listed';
import { reportWebhookAttempts } from '../metrics';
import { textOf } from '../lib/unknown-values';

const SYSTEM = 'system';
const GONE = 410;
/** A healthy endpoint's last attempt is recorded at most this often (endpoint_health.last_attempt_at). */
const HEALTHY_ATTEMPT_RECORD_MS = 60_000;

/**
 * When a failing endpoint is tried next: the earlier of the retry already known (if still
 * to come) and the one this failed attempt scheduled. A delivery out of attempts schedules none.
 */
function earliestRetry(known: string | null, scheduled: string | null, now: number): string | null {
  const upcoming = [known, scheduled].filter((at): at is string => at !== null && Date.parse(at) > now);
  return upcoming.length > 0 ? upcoming.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b)) : null;
}
const CONSUMER = 'webhooks';
/**
 * Events turned into deliveries at once. Each costs a durable write; handled one by one
 * they queue for a disk flush each and deliveries fall behind creates under load. Order
 * is best-effort by docs/api.md (receivers sort by created_at), so they may overlap.
 */
const CONSUMER_CONCURRENCY = 32;
/**
 * After an attempt whose outcome could not be recorded (the store refused or could not
 * take the write), the delivery is still pending and due: it waits this long before being
 * sent again, doubling to the cap, rather than hammering the receiver while the store fails.
 */
const UNRECORDED_HOLD_MS = 1_000;
const UNRECORDED_HOLD_MAX_MS = 5 * 60_000;
/** Node timers overflow past ~24.8 days; later attempts are re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DispatcherDeps {
  store: Store;
  writer: ResourceWriter;
  bus: EventBus;
  config: WebhookConfig;
  logger: Logger;
  /** Counts each delivery made, for usage metering (src/usage); a redelivered event's existing delivery is not counted again. */
  usage?: { countDelivery(team: string): void };
}

interface Key {
  team: string;
  id: string;
}

const keyOf = ({ team, id }: Key) => `${team}/${id}`;

interface SubscriptionRate {
  active: boolean;
  perMinute: number;
}

/** A subscription that is gone needs no token: its attempt ends the delivery `failed`. */
const rateOf = (webhook: Webhook | undefined): SubscriptionRate => ({
  active: webhook?.status.status === 'active',
  perMinute: webhook?.spec.rate_limit_per_minute ?? 1,
});

export class WebhookDispatcher {
  private readonly timers = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  /**
   * Due deliveries waiting for a free place (the in-flight caps) or their subscription's
   * rate limit; teams and their subscriptions take turns (fair-scheduler.ts).
   */
  private readonly queue: FairScheduler<Key>;
  /** Each subscription's rate limit, read when its first delivery falls due and kept current by the watch. */
  private readonly rates = new Map<string, SubscriptionRate>();
  /** Timers of subscriptions passed over until a token of their rate limit is due. */
  private readonly sleeps = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Deliveries whose last attempts could not be recorded: how many in a row, and held until when. */
  private readonly unrecorded = new Map<string, { failures: number; until: number }>();
  /**
   * Pending deliveries this dispatcher does not attempt until their subscription changes:
   * a listener's (`cloudplane listen`), whose attempts the replica holding its stream makes
   * (listener-hub.ts), until the listener is deleted; and an inactive subscription's, held
   * until it is re-enabled or deleted. Without it a held delivery went straight back into
   * the queue, hundreds of times a second each.
   */
  private readonly parked = new Set<string>();
  private readonly buckets: TokenBuckets;
  private readonly notifier: OwnerNotifier;
  private readonly connections: DeliveryConnections;
  private unsubscribe: (() => void) | null = null;
  private unwatch: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly deps: DispatcherDeps) {
    this.queue = new FairScheduler(deps.config.inFlight);
    this.buckets = new TokenBuckets(60_000 * deps.config.timeScale);
    this.notifier = new OwnerNotifier(deps.store, deps.config, deps.logger);
    this.connections = new DeliveryConnections(deps.config.idleConnections);
  }

  async start(): Promise<void> {
    reportWebhookAttempts(() => ({ inFlight: this.queue.inFlight, waiting: this.queue.waiting }));
    this.unwatch = this.deps.store.watch((event) => {
      this.onStoreChange(event);
    });
    for await (const delivery of eachObject<Delivery['spec'], Delivery['status']>(this.deps.store, deliveryFamily.kind)) this.scheduleFromRecord(delivery);
    this.unsubscribe = this.deps.bus.subscribe(CONSUMER, (event) => this.onEvent(event), { concurrency: CONSUMER_CONCURRENCY });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unwatch?.();
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    for (const timer of this.sleeps) clearTimeout(timer);
    this.timers.clear();
    this.sleeps.clear();
    this.queue.clear();
    this.parked.clear();
    // An attempt under way finishes (within the timeout) so its outcome is recorded.
    await Promise.allSettled([...this.inFlight.values()]);
    this.connections.close();
    this.notifier.close();
  }

  /**
   * The bus consumer: one delivery per active subscription the event matches. The
   * deliveries of one event are written together (group commit: on the embedded store one
   * append and one disk flush for all of them, on the Kubernetes store concurrent requests),
   * and the event is finished, so acknowledged to the bus, only once every one of them is
   * durable; a write that failed fails the event, which the bus then hands over again.
   *
   * The writes are started in short slices of the event loop (lib/event-loop-turns.ts),
   * of the background budget: one team's 16 creates to 100 subscriptions are 4,800
   * deliveries; started in one go they held the loop for tens of milliseconds at a time,
   * and in 2 ms slices every step of another team's request still waited a slice.
   */
  private async onEvent(event: CloudEvent): Promise<void> {
    const matching: Webhook[] = [];
    // The active subscriptions alone, from the status index: the team's deleted ones, kept
    // for their retention, would otherwise be read on every event.
    for await (const webhook of listedObjects<Webhook['spec'], Webhook['status']>(this.deps.store, webhookFamily.kind, event.team_id, { status: 'active' })) {
      // A subscription is not told of its own failed delivery at the address that just failed.
      if (subscriptionMatches(webhook.spec, event) && !(event.type === DELIVERY_FAILED && event.data.subscription_id === webhook.meta.id))
        matching.push(webhook);
    }
    const body = JSON.stringify(event);
    const writes: Array<Promise<PromiseSettledResult<void>>> = [];
    for (const webhook of matching) {
      await takeTurn(BACKGROUND_TURN_BUDGET_MS);
      // Settled at once: a write that fails while a later one waits for its slice is not an unhandled rejection.
      writes.push(
        this.createDelivery(event, webhook, body).then(
          (value) => ({ status: 'fulfilled', value }),
          (reason: unknown) => ({ status: 'rejected', reason }),
        ),
      );
    }
    const failed = (await Promise.all(writes)).find((w): w is PromiseRejectedResult => w.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async createDelivery(event: CloudEvent, webhook: Webhook, body: string): Promise<void> {
    const id = deliveryIdFor(webhook.meta.id, event.id);
    const spec = { webhook_id: webhook.meta.id, event_id: event.id, event_type: event.type, body };
    try {
      const delivery = (await this.deps.writer.create(deliveryFamily, event.team_id, spec, SYSTEM, id)) as Delivery;
      this.deps.usage?.countDelivery(event.team_id);
      this.scheduleFromRecord(delivery);
    } catch (err) {
      // Already made before a crash or a redelivery of the event: the record carries on.
      if (!(err instanceof AlreadyExistsError)) throw err;
      await this.finishCutCreate(event.team_id, id);
    }
  }

  /**
   * In cluster mode a create is two writes, the status second: a crash in between leaves
   * the delivery status-less, and nothing would ever send it. The event handed over again
   * (the consumer had not finished it) gives it the status its create would have.
   */
  private async finishCutCreate(team: string, id: string): Promise<void> {
    const existing = await this.deps.store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, team, id);
    // Not in this replica's cache yet: the bus hands the event over again, and by then it is (or the create succeeds).
    if (!existing) throw new Error(`delivery ${id} exists but is not in the cache yet`);
    if (existing.status.status) return;
    this.scheduleFromRecord((await this.deps.writer.initialize(deliveryFamily, existing, SYSTEM)) as Delivery);
  }

  private onStoreChange({ type, object, previous }: WatchEvent): void {
    if (this.stopped) return;
    if (type === 'deleted') {
      if (isWebhook(object)) this.rates.delete(object.meta.id);
      return;
    }
    if (isDelivery(object)) {
      this.scheduleFromRecord(object);
      return;
    }
    if (!isWebhook(object)) return;
    if (this.rates.has(object.meta.id)) this.rates.set(object.meta.id, rateOf(object));
    const was = previous?.status.status;
    if (was !== 'active' && object.status.status === 'active') void this.resumeHeld(object);
    if (was !== 'deleted' && object.status.status === 'deleted' && (isListener(object) || was !== 'active')) void this.resumeHeld(object);
  }

  /** A re-enabled subscription's pending deliveries were held, a deleted listener's or inactive one's parked; they go again now (a deleted one's to end `failed`). */
  private async resumeHeld(webhook: Webhook): Promise<void> {
    for await (const delivery of listedObjects<Delivery['spec'], Delivery['status']>(this.deps.store, deliveryFamily.kind, webhook.meta.team, {
      where: { webhook_id: webhook.meta.id },
    })) {
      this.parked.delete(keyOf(delivery.meta));
      this.scheduleFromRecord(delivery, true);
    }
  }

  /** Arms a timer for a pending delivery at its next_retry_at; idempotent. */
  private scheduleFromRecord(delivery: Delivery, force = false): void {
    const key = { team: delivery.meta.team, id: delivery.meta.id };
    const name = keyOf(key);
    if (this.stopped || this.inFlight.has(name)) return;
    if (this.parked.has(name)) {
      if (delivery.status.status !== 'pending') this.parked.delete(name);
      return;
    }
    const existing = this.timers.get(name);
    if (delivery.status.status !== 'pending' || !delivery.status.next_retry_at) {
      if (existing) clearTimeout(existing.timer);
      this.timers.delete(name);
      this.unrecorded.delete(name);
      return;
    }
    const due = Math.max(Date.parse(delivery.status.next_retry_at), this.unrecorded.get(name)?.until ?? 0);
    if (existing && existing.due === due && !force) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(
      () => {
        this.timers.delete(name);
        if (due > Date.now()) {
          this.scheduleFromRecord(delivery);
          return;
        }
        this.enqueue(delivery.spec.webhook_id, key);
      },
      Math.min(Math.max(0, due - Date.now()), MAX_TIMER_MS),
    );
    this.timers.set(name, { due, timer });
  }

  private enqueue(webhookId: string, key: Key): void {
    this.queue.add(key.team, webhookId, keyOf(key), key);
    this.drain();
  }

  /** Starts due deliveries, in fair turns, while the caps leave room. */
  private drain(): void {
    while (!this.stopped) {
      const started = this.queue.next((team, webhookId) => this.admit(team, webhookId));
      if (!started) return;
      const { item: key, id: name } = started;
      // Queued again while its attempt ran (a store change re-armed it): that attempt reschedules it.
      if (this.inFlight.has(name)) {
        this.queue.finish(key.team, started.subscription);
        continue;
      }
      const run = this.attempt(key)
        .then(() => void this.unrecorded.delete(name))
        .catch((err: unknown) => {
          const failures = (this.unrecorded.get(name)?.failures ?? 0) + 1;
          const holdMs = backoffMs(failures - 1, UNRECORDED_HOLD_MS, UNRECORDED_HOLD_MAX_MS);
          this.unrecorded.set(name, { failures, until: Date.now() + holdMs });
          this.deps.logger.error({ delivery_id: key.id, err: textOf(err), retry_in_ms: holdMs }, 'webhook delivery attempt could not be recorded');
        })
        .finally(() => {
          this.inFlight.delete(name);
          this.queue.finish(key.team, started.subscription);
          void this.rescheduleAfterAttempt(key);
          this.drain();
        });
      this.inFlight.set(name, run);
    }
  }

  /**
   * Whether the subscription may start its next delivery now: a token of its rate limit
   * (an inactive or deleted one needs none: its attempt only holds or fails the delivery).
   * Otherwise it is passed over until the token is due; its rate, unknown yet, is read first.
   */
  private admit(team: string, webhookId: string): boolean {
    const rate = this.rates.get(webhookId);
    if (!rate) {
      this.passOver(team, webhookId, this.readRate(team, webhookId));
      return false;
    }
    const waitMs = rate.active ? this.buckets.take(webhookId, rate.perMinute) : 0;
    if (waitMs === 0) return true;
    this.passOver(team, webhookId, this.sleep(waitMs));
    return false;
  }

  /** Passes the subscription over, its deliveries keeping their places, until `wait` ends. */
  private passOver(team: string, webhookId: string, wait: Promise<void>): void {
    this.queue.pause(team, webhookId);
    void wait.then(() => {
      if (this.stopped) return;
      this.queue.resume(team, webhookId);
      this.drain();
    });
  }

  private async readRate(team: string, webhookId: string): Promise<void> {
    try {
      const webhook = await this.deps.store.get<Webhook['spec'], Webhook['status']>(webhookFamily.kind, team, webhookId);
      this.rates.set(webhookId, rateOf(webhook));
    } catch (err) {
      this.deps.logger.error({ webhook_id: webhookId, err: textOf(err) }, 'webhook subscription could not be read; its due deliveries wait');
      await this.sleep(UNRECORDED_HOLD_MS);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeps.delete(timer);
        resolve();
      }, ms);
      this.sleeps.add(timer);
    });
  }

  /** The record written at the end of an attempt was ignored while it ran; look at it again. */
  private async rescheduleAfterAttempt(key: Key): Promise<void> {
    if (this.stopped) return;
    const delivery = await this.deps.store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, key.team, key.id);
    if (delivery) this.scheduleFromRecord(delivery);
  }

  /** One attempt of one delivery, and its outcome on the delivery and the subscription. */
  private async attempt({ team, id }: Key): Promise<void> {
    const { store, config, logger } = this.deps;
    // The caps' worth of attempts start at once when places free up: in slices, likewise.
    await takeTurn();
    const delivery = await store.get<Delivery['spec'], Delivery['status']>(deliveryFamily.kind, team, id);
    if (!delivery || delivery.status.status !== 'pending') return;
    const webhook = await store.get<Webhook['spec'], Webhook['status']>(webhookFamily.kind, team, delivery.spec.webhook_id);
    if (!webhook || webhook.status.status === 'deleted') {
      await finishAttempt(this.deps.writer, delivery, { status: 'failed', next_retry_at: null, error: 'the subscription was deleted' });
      return;
    }
    // Held while the subscription is inactive; re-enabling it resumes the delivery.
    if (webhook.status.status !== 'active') {
      this.parked.add(keyOf({ team, id }));
      // Re-enabled while this attempt read it: the resume found the delivery in flight and passed it by.
      const now = await store.get<Webhook['spec'], Webhook['status']>(webhookFamily.kind, team, webhook.meta.id);
      if (now?.status.status !== webhook.status.status) this.parked.delete(keyOf({ team, id }));
      return;
    }
    if (isListener(webhook)) {
      this.parked.add(keyOf({ team, id }));
      return;
    }

    const now = Date.now();
    const secrets = await signingSecrets(store, team, webhook.meta.id, now);
    const headers = deliveryHeaders(secrets, { id, eventType: delivery.spec.event_type, body: delivery.spec.body }, Math.floor(now / 1000));
    const result = await sendDelivery(webhook.spec.url, { ...headers }, delivery.spec.body, config.timeoutMs, config, this.connections);
    // Attempts started together end together (a receiver that never answers times them all
    // out at once): their outcomes are recorded in slices, between which requests are served.
    await takeTurn();
    const recorded = await recordAttempt(this.deps.writer, config, delivery, result, now);
    if (!recorded) return;
    logger.debug(
      {
        delivery_id: id,
        webhook_id: webhook.meta.id,
        attempt: delivery.status.attempt + 1,
        ok: result.ok,
        response_status: result.status,
        error: result.error,
        detail: result.detail,
      },
      'webhook delivery attempt',
    );
    await this.countOutcome(webhook, result, now, recorded.nextRetryAt);
  }

  /**
   * consecutive_failures across the subscription's attempts, and the endpoint's health
   * (resources/webhook.ts endpointHealthOf); at the limit, or at a 410 Gone, it is disabled.
   * A success writes only when it ends a failure or the last attempt recorded is a minute
   * old: a healthy endpoint's deliveries cost no write of their subscription each.
   */
  private async countOutcome(webhook: Webhook, result: AttemptResult, startedAt: number, nextRetryAt: string | null): Promise<void> {
    const { writer, config } = this.deps;
    // Set by the mutation, which runs inside mutateStatus (an object: the compiler would take a `let` for never set).
    const outcome: { tripped: string | null } = { tripped: null };
    const updated = await writer.mutateStatus<Webhook>(
      webhookFamily,
      webhook.meta.team,
      webhook.meta.id,
      (latest) => {
        outcome.tripped = null;
        const at = new Date(startedAt).toISOString();
        if (result.ok) {
          const recordedAt = latest.status.last_attempt_at ? Date.parse(latest.status.last_attempt_at) : 0;
          if (latest.status.consecutive_failures === 0 && startedAt - recordedAt < HEALTHY_ATTEMPT_RECORD_MS) return null;
          return { consecutive_failures: 0, last_attempt_at: at, last_error: null, next_retry_at: null, failures_before_disable: null };
        }
        const failures = latest.status.consecutive_failures + 1;
        const health = {
          last_attempt_at: at,
          last_error: result.error,
          next_retry_at: earliestRetry(latest.status.next_retry_at ?? null, nextRetryAt, startedAt),
          failures_before_disable: Math.max(0, config.disableAfter - failures),
        };
        // 410 Gone: the receiver says the endpoint is gone for good; no use trying it again.
        const gone = result.status === GONE;
        if ((failures < config.disableAfter && !gone) || latest.status.status !== 'active') return { consecutive_failures: failures, ...health };
        const tripped = gone
          ? 'Disabled at once: the receiver answered 410 Gone.'
          : `Disabled after ${failures} consecutive failed delivery attempts; the last: ${result.error ?? 'unknown error'}.`;
        outcome.tripped = tripped;
        return { consecutive_failures: failures, ...health, failures_before_disable: 0, status: 'inactive', disabled_reason: tripped };
      },
      SYSTEM,
    );
    const { tripped } = outcome;
    if (tripped) {
      this.buckets.forget(webhook.meta.id);
      await this.notifier.webhookDisabled({ team: webhook.meta.team, webhookId: webhook.meta.id, url: updated.spec.url, reason: tripped });
    }
  }
}

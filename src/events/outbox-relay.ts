/**
 * Moves the events in resources' outboxes (status.pending_events) onto the bus, then
 * removes them from the outbox. The bus ignores an event id it already has, so a crash
 * after publishing but before the removal re-publishes harmlessly.
 *
 * Events are published as soon as their write is seen; their removal waits `drainDelayMs`
 * (CLOUDPLANE_OUTBOX_DRAIN_SECONDS, 5 minutes). Any status write of the object meanwhile
 * (the next step of its lifecycle, an action) leaves out the events this relay has
 * published (`isPublished`), so the removal rides on a write that happens anyway; only an
 * object that is not written again within the delay costs a write of the relay's own. The
 * delay stays well inside the bus's duplicate window, so a new leader, which publishes
 * every outbox again, adds nothing to the stream.
 */
import type { Logger } from 'pino';
import type { Store, StoredObject } from '../store/types';
import type { EventBus } from './types';
import type { CloudEvent } from '../resources/cloud-event';
import type { PublishedEvents } from '../resources/writer';
import { ConflictError, NotFoundError } from '../store/types';
import { WorkQueue } from '../lib/work-queue';
import { fieldOf } from '../lib/unknown-values';
import { eventsPublished } from '../metrics';
import { DRAIN_DELAY_MS } from './write-timing';

type WithOutbox = StoredObject<unknown, { pending_events?: CloudEvent[] }>;

/**
 * Objects relayed at once. Each relay is a publish and a write, both durable; one worker
 * waited for two disk flushes (or two API-server round trips) per object, and every
 * state change of every resource passes here, so events reached the bus ever later under
 * load. The queue never hands one key to two workers, so an object's events keep order.
 * The bus's log commits every append waiting at once with one fsync, so the workers set
 * how many events share a flush: with 8, a closed loop of creates outran the relay and
 * events waited 644 ms (p50) to reach the bus; with 32, 25 ms (bench/webhooks.ts,
 * saturated row, same machine and load).
 */
const RELAY_WORKERS = 32;
/** Lost races with other writers of an object before its relay goes back to the queue, with backoff. */
const MAX_CONFLICTS_PER_PASS = 10;

export interface OutboxRelayOptions {
  drainDelayMs?: number;
}

const hasPending = (object: StoredObject<unknown, unknown>) => {
  const pending = fieldOf(object.status, 'pending_events');
  return Array.isArray(pending) && pending.length > 0;
};

export class OutboxRelay implements PublishedEvents {
  // Keys are kind/team/id: teams take turns by the middle part.
  private readonly queue = new WorkQueue({ backoff: { baseMs: 200, maxMs: 30_000 }, teamOf: (key) => key.split('/')[1] ?? '' });
  private unwatch: (() => void) | null = null;
  private workers: Promise<unknown> | null = null;
  /** Object key -> ids of its events on the bus that may still be in its outbox. */
  private readonly published = new Map<string, Set<string>>();
  private readonly publishedIds = new Set<string>();
  /** Object key -> when its published events are removed by the relay itself. */
  private readonly drainAt = new Map<string, number>();
  private readonly drainDelayMs: number;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly kinds: string[],
    private readonly logger: Logger,
    options: OutboxRelayOptions = {},
  ) {
    this.drainDelayMs = options.drainDelayMs ?? DRAIN_DELAY_MS;
  }

  isPublished(eventId: string): boolean {
    return this.publishedIds.has(eventId);
  }

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (hasPending(event.object) && event.type !== 'deleted') this.queue.add(this.keyOf(event.object));
      // Gone, or its outbox emptied by another write: nothing of it is left to take out.
      else this.forget(this.keyOf(event.object));
    });
    for (const kind of this.kinds) {
      for (const object of await this.store.list(kind)) if (hasPending(object)) this.queue.add(this.keyOf(object));
    }
    this.workers = Promise.all(Array.from({ length: RELAY_WORKERS }, () => this.work()));
  }

  /**
   * Published events still in outboxes stay there: removing them all now would be a write
   * per object at the worst moment (a rollout), and the next leader publishes them again,
   * which the bus ignores.
   */
  async stop(): Promise<void> {
    this.unwatch?.();
    this.queue.shutDown();
    await this.workers;
  }

  private keyOf(object: StoredObject<unknown, unknown>): string {
    return `${object.meta.kind}/${object.meta.team}/${object.meta.id}`;
  }

  private markPublished(key: string, eventId: string): void {
    let ids = this.published.get(key);
    if (!ids) this.published.set(key, (ids = new Set()));
    ids.add(eventId);
    this.publishedIds.add(eventId);
  }

  /** Keeps of an object's published ids only those still in its outbox. */
  private prune(key: string, pending: CloudEvent[]): void {
    const ids = this.published.get(key);
    if (!ids) return;
    const still = new Set(pending.map((e) => e.id));
    for (const id of ids) {
      if (still.has(id)) continue;
      ids.delete(id);
      this.publishedIds.delete(id);
    }
    if (ids.size === 0) this.published.delete(key);
  }

  private forget(key: string): void {
    this.prune(key, []);
    this.drainAt.delete(key);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === null) return;
      try {
        await this.relay(key);
        this.queue.forget(key);
      } catch (err) {
        this.logger.warn({ err, key }, 'publishing outbox events failed; will retry');
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async relay(key: string): Promise<void> {
    const [kind, team, id] = key.split('/');
    for (let conflicts = 0; ;) {
      const object = await this.store.get<WithOutbox['spec'], WithOutbox['status']>(kind, team, id);
      const pending = object?.status.pending_events ?? [];
      this.prune(key, pending);
      if (!object || pending.length === 0) {
        this.forget(key);
        return;
      }
      // Each event once: a removal that lost a race to another writer (a resource updated
      // many times a second) is retried without publishing the same events again.
      for (const event of pending) {
        if (this.publishedIds.has(event.id)) continue;
        await this.bus.publish(event);
        this.markPublished(key, event.id);
        eventsPublished.inc({ type: event.type });
      }
      // Another write of the object may take them out meanwhile; if none does, this pass's timer does.
      const due = this.drainAt.get(key) ?? Date.now() + this.drainDelayMs;
      if (Date.now() < due) {
        this.drainAt.set(key, due);
        this.queue.addAfter(key, due - Date.now());
        return;
      }
      const published = this.published.get(key) ?? new Set<string>();
      try {
        // Only the published events leave the outbox; any added meanwhile stay for the next pass.
        const latest = await this.store.get<WithOutbox['spec'], WithOutbox['status']>(kind, team, id);
        if (!latest) return;
        const remaining = (latest.status.pending_events ?? []).filter((e) => !published.has(e.id));
        await this.store.updateStatus({ ...latest, status: { ...latest.status, pending_events: remaining } });
        this.prune(key, remaining);
        this.drainAt.delete(key);
        if (remaining.length === 0) return;
      } catch (err) {
        if (err instanceof NotFoundError) return;
        // A few lost races are normal; past that, back off through the queue rather than
        // spin (a store that fails without I/O would never let the event loop turn).
        if (!(err instanceof ConflictError) || ++conflicts >= MAX_CONFLICTS_PER_PASS) throw err;
      }
    }
  }
}

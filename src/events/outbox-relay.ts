/**
 * Moves the events in resources' outboxes (status.pending_events) onto the bus, then
 * removes them from the outbox. The bus ignores an event id it already has, so a crash
 * after publishing but before the removal re-publishes harmlessly.
 */
import type { Logger } from 'pino';
import type { Store, StoredObject } from '../store/types';
import type { EventBus, CloudEvent } from './types';
import { ConflictError, NotFoundError } from '../store/types';
import { WorkQueue } from '../controllers/work-queue';
import { eventsPublished } from '../metrics';

type WithOutbox = StoredObject<unknown, { pending_events?: CloudEvent[] }>;

/**
 * Objects relayed at once. Each relay is a publish and a write, both durable; one worker
 * waited for two disk flushes (or two API-server round trips) per object, and every
 * state change of every resource passes here, so events reached the bus ever later under
 * load. The queue never hands one key to two workers, so an object's events keep order.
 */
const RELAY_WORKERS = 8;
/** Lost races with other writers of an object before its relay goes back to the queue, with backoff. */
const MAX_CONFLICTS_PER_PASS = 10;

const hasPending = (object: StoredObject<unknown, unknown>) =>
  ((object as WithOutbox).status?.pending_events?.length ?? 0) > 0;

export class OutboxRelay {
  private readonly queue = new WorkQueue({ baseMs: 200, maxMs: 30_000 });
  private unwatch: (() => void) | null = null;
  private workers: Promise<void[]> | null = null;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly kinds: string[],
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (event.type !== 'deleted' && hasPending(event.object)) this.queue.add(this.keyOf(event.object));
    });
    for (const kind of this.kinds) {
      for (const object of await this.store.list(kind)) if (hasPending(object)) this.queue.add(this.keyOf(object));
    }
    this.workers = Promise.all(Array.from({ length: RELAY_WORKERS }, () => this.work()));
  }

  async stop(): Promise<void> {
    this.unwatch?.();
    this.queue.shutDown();
    await this.workers;
  }

  private keyOf(object: StoredObject<unknown, unknown>): string {
    return `${object.meta.kind}/${object.meta.team}/${object.meta.id}`;
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
    // Published in this pass: a removal that lost a race to another writer (a resource
    // updated many times a second) is retried without publishing the same events again,
    // which made each retry cost the whole outbox and counted every event many times.
    const published = new Set<string>();
    for (let conflicts = 0; ; ) {
      const object = (await this.store.get(kind, team, id)) as WithOutbox | undefined;
      const pending = object?.status.pending_events ?? [];
      if (!object || pending.length === 0) return;
      for (const event of pending) {
        if (published.has(event.id)) continue;
        await this.bus.publish(event);
        published.add(event.id);
        eventsPublished.inc({ type: event.type });
      }
      try {
        // Only the published events leave the outbox; any added meanwhile stay for the next pass.
        const latest = (await this.store.get(kind, team, id)) as WithOutbox | undefined;
        if (!latest) return;
        const remaining = (latest.status.pending_events ?? []).filter((e) => !published.has(e.id));
        await this.store.updateStatus({ ...latest, status: { ...latest.status, pending_events: remaining } });
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

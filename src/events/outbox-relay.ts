/**
 * Moves the events in resources' outboxes (status.pending_events) onto the bus, then
 * removes them from the outbox. The bus ignores an event id it already has, so a crash
 * after publishing but before the removal re-publishes harmlessly.
 *
 * Publishing is immediate; the removal is not. It waits CLEAR_DELAY_MS after the first
 * event it would remove was published, so the events of a quick run of transitions
 * (`created`, then `running` a moment later) leave the outbox in one write instead of
 * one each. That write is what this costs the store (a disk flush, or an API-server
 * round trip that may conflict with the reconciler's next status write).
 */
import type { Logger } from 'pino';
import type { Store, StoredObject } from '../store/types';
import type { EventBus, CloudEvent } from './types';
import { ConflictError, NotFoundError } from '../store/types';
import { WorkQueue } from '../controllers/work-queue';
import { eventsPublished } from '../metrics';

type WithOutbox = StoredObject<unknown, { pending_events?: CloudEvent[] }>;

/**
 * Objects relayed at once. A publish is a durable write of the bus; one worker waited for
 * each in turn, and every state change of every resource passes here, so events reached
 * the bus ever later under load. The queue never hands one key to two workers, so an
 * object's events keep their order.
 */
const RELAY_WORKERS = 8;
/** How long published events may stay in an outbox, to be removed together. */
const CLEAR_DELAY_MS = 1_000;

const pendingOf = (object: StoredObject<unknown, unknown> | undefined) => (object as WithOutbox | undefined)?.status?.pending_events ?? [];

/** What this relay has published from one object's outbox and not yet removed from it. */
interface Published {
  ids: Set<string>;
  /** When the first of them was published: the removal is due CLEAR_DELAY_MS later. */
  since: number;
}

export class OutboxRelay {
  private readonly queue = new WorkQueue({ baseMs: 200, maxMs: 30_000 });
  private readonly published = new Map<string, Published>();
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
      if (event.type !== 'deleted' && pendingOf(event.object).length > 0) this.queue.add(this.keyOf(event.object));
    });
    for (const kind of this.kinds) {
      for (const object of await this.store.list(kind)) if (pendingOf(object).length > 0) this.queue.add(this.keyOf(object));
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

  /** Publishes what is new in the object's outbox, and empties the outbox once that is due. */
  private async relay(key: string): Promise<void> {
    const [kind, team, id] = key.split('/');
    for (;;) {
      const object = await this.store.get(kind, team, id);
      const pending = pendingOf(object);
      if (pending.length === 0) {
        this.published.delete(key);
        return;
      }
      const done = this.published.get(key) ?? { ids: new Set<string>(), since: Date.now() };
      this.published.set(key, done);
      for (const event of pending) {
        if (done.ids.has(event.id)) continue;
        await this.bus.publish(event);
        eventsPublished.inc({ type: event.type });
        done.ids.add(event.id);
      }
      const wait = done.since + CLEAR_DELAY_MS - Date.now();
      if (wait > 0) {
        this.queue.addAfter(key, wait);
        return;
      }
      try {
        // Only published events leave the outbox; one added since the read is a conflict.
        await this.store.updateStatus({ ...object!, status: { ...(object!.status as object), pending_events: [] } });
        this.published.delete(key);
        return;
      } catch (err) {
        if (err instanceof NotFoundError) {
          this.published.delete(key);
          return;
        }
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  }
}

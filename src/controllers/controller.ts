/**
 * The controller runtime: one controller per family, fed by the store's watch and a
 * periodic resync, with a fixed number of workers taking keys from a WorkQueue.
 * Reconcilers are level-triggered: they read the object and drive it one step closer to
 * what it should be, so a crash at any line is repaired by the next pass.
 */
import type { Logger } from 'pino';
import type { Store, StoredObject, WatchEvent } from '../store/types';
import { sameJson } from '../lib/canonical-json';
import { onlyOutboxDiffers } from '../store/outbox-only';
import { WorkQueue } from '../lib/work-queue';
import { BACKGROUND_TURN_BUDGET_MS, yieldIfDue } from '../lib/event-loop-turns';
import { reconcileCounter, reconcileDuration } from '../metrics';

export interface ReconcileResult {
  /** Look at the object again after this many milliseconds (polling a provider, a timer). */
  requeueAfterMs?: number;
  /**
   * The resourceVersion of the pass's own write, when a pass on it would find nothing to do
   * before `requeueAfterMs`: the write was made on what the pass read and leaves it in the
   * same state. Its watch event is then dropped rather than queued, as controller-runtime's
   * predicates drop events that need no work; any other version queues a pass as usual.
   */
  settledVersion?: string;
}

export interface Reconciler {
  /** The kind this reconciler owns. */
  kind: string;
  reconcile(team: string, id: string): Promise<ReconcileResult | undefined>;
  /** Optional: a source of other changes that call for a look at a resource (what its driver made). Returns a stop. */
  watchExternal?(changed: (team: string, id: string) => void): () => void;
}

/**
 * A reconciler whose passes run `reconcile` (which calls `inner.reconcile` when it goes
 * on), and which is `inner` in every other respect. Decorators (adoption, pausing, a
 * webhook's signing secret) are made through here, the one place that forwards the
 * optional parts of a Reconciler: one added later reaches every decorated reconciler.
 */
export function decorating(inner: Reconciler, reconcile: Reconciler['reconcile']): Reconciler {
  return {
    kind: inner.kind,
    watchExternal: inner.watchExternal?.bind(inner),
    reconcile,
  };
}

export interface ControllerOptions {
  workers: number;
  resyncMs: number;
  /** The most resync passes a second (WorkQueue's background pace); unpaced without it. */
  resyncPassesPerSecond?: number;
  logger: Logger;
}

const keyOf = (object: StoredObject<unknown, unknown>) => `${object.meta.team}/${object.meta.id}`;

/**
 * A change no reconciler acts on: the outbox relay took published events out of the
 * status, and nothing else changed. Each state change brought one of these, and each
 * queued a pass that found nothing to do.
 */
export function outboxOnlyChange({ type, object, previous }: WatchEvent): boolean {
  if (type !== 'modified' || !previous) return false;
  const [now, before] = [object.meta, previous.meta];
  if (now.generation !== before.generation || now.deletionTimestamp !== before.deletionTimestamp || now.paused !== before.paused) return false;
  if (reconcileAsked({ type, object, previous })) return false;
  if (!sameJson(now.labels, before.labels) || !sameJson(object.spec, previous.spec)) return false;
  return onlyOutboxDiffers(previous.status, object.status);
}

/** A new ask for a pass now (ObjectMeta.reconcileRequestedAt): it goes ahead of a failure's backoff. */
const reconcileAsked = ({ object, previous }: WatchEvent): boolean =>
  previous !== undefined && object.meta.reconcileRequestedAt !== undefined && object.meta.reconcileRequestedAt !== previous.meta.reconcileRequestedAt;

export class Controller {
  private readonly queue: WorkQueue;
  private readonly workers: Promise<void>[] = [];
  private unwatch: (() => void) | null = null;
  private unwatchExternal: (() => void) | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private idleWaiters: Array<() => void> = [];
  private busy = 0;
  /** Keys whose pass runs now, with the version of the last change seen meanwhile (null: none yet), judged as the pass ends. */
  private readonly running = new Map<string, string | null>();
  /** Per key, the version of its last pass's own write whose watch event has not come yet (ReconcileResult.settledVersion). */
  private readonly settled = new Map<string, string>();

  constructor(
    private readonly store: Store,
    private readonly reconciler: Reconciler,
    private readonly options: ControllerOptions,
  ) {
    this.queue = new WorkQueue({ backgroundPerSecond: options.resyncPassesPerSecond });
  }

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      this.onChange(event);
    });
    this.unwatchExternal =
      this.reconciler.watchExternal?.((team, id) => {
        this.enqueue(team, id);
      }) ?? null;
    await this.resync();
    this.resyncTimer = setInterval(() => void this.resync(), this.options.resyncMs);
    this.resyncTimer.unref();
    for (let i = 0; i < this.options.workers; i++) this.workers.push(this.work());
  }

  async stop(): Promise<void> {
    this.unwatch?.();
    this.unwatchExternal?.();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.queue.shutDown();
    await Promise.all(this.workers);
  }

  enqueue(team: string, id: string): void {
    this.queue.add(`${team}/${id}`);
  }

  private onChange(event: WatchEvent): void {
    if (event.object.meta.kind !== this.reconciler.kind) return;
    const key = keyOf(event.object);
    if (event.type === 'deleted') {
      this.settled.delete(key);
      return;
    }
    if (outboxOnlyChange(event)) return;
    if (reconcileAsked(event)) this.queue.forget(key);
    const version = event.object.meta.resourceVersion;
    // The embedded store tells of a write while it is being made, so within the pass that made it.
    if (this.running.has(key)) {
      this.running.set(key, version);
      return;
    }
    if (this.settled.get(key) === version) {
      this.settled.delete(key);
      return;
    }
    this.queue.add(key);
  }

  /** A pass has ended: a change it saw come in that was not its own settled write calls for another. */
  private passEnded(key: string, settledVersion: string | undefined): void {
    const seen = this.running.get(key) ?? null;
    this.running.delete(key);
    this.settled.delete(key);
    if (seen !== null && seen !== settledVersion) this.queue.add(key);
    // Its watch event is still to come (the Kubernetes store's arrives after the write's answer).
    else if (seen === null && settledVersion !== undefined) this.settled.set(key, settledVersion);
  }

  /**
   * Every object of the kind, looked at once no change waits (WorkQueue.addBackground).
   * Queueing 100,000 keys is itself a third of a second: it gives the loop back as a
   * resync's passes do. While the last resync's keys still wait (paced, a large collection
   * takes longer than the period), a new one would only walk the kind to find them queued.
   */
  private async resync(): Promise<void> {
    if (this.queue.backgroundWaiting > 0) return;
    // Keys, not objects: each pass reads its object when it runs.
    for (const key of await this.store.keys(this.reconciler.kind)) {
      this.queue.addBackground(key);
      const due = yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
      if (due) await due;
    }
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === null) return;
      this.busy++;
      this.running.set(key, null);
      let settledVersion: string | undefined;
      const [team, id] = key.split('/');
      const endTimer = reconcileDuration.startTimer({ kind: this.reconciler.kind });
      try {
        const result = await this.reconciler.reconcile(team, id);
        settledVersion = result?.settledVersion;
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
        reconcileCounter.inc({ kind: this.reconciler.kind, result: 'success' });
      } catch (err) {
        const delay = this.queue.addRateLimited(key);
        reconcileCounter.inc({ kind: this.reconciler.kind, result: 'error' });
        this.options.logger.warn({ err, kind: this.reconciler.kind, key, retryInMs: delay }, 'reconcile failed; will retry');
      } finally {
        endTimer();
        this.passEnded(key, settledVersion);
        this.queue.done(key);
        this.busy--;
        if (this.busy === 0 && this.queue.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    }
  }
}

/**
 * The controller runtime: one controller per family, fed by the store's watch and a
 * periodic resync, with a fixed number of workers taking keys from a WorkQueue.
 * Reconcilers are level-triggered: they read the object and drive it one step closer to
 * what it should be, so a crash at any line is repaired by the next pass.
 */
import type { Logger } from 'pino';
import type { Store, StoredObject } from '../store/types';
import { WorkQueue } from './work-queue';
import { reconcileCounter, reconcileDuration } from '../metrics';

export interface ReconcileResult {
  /** Look at the object again after this many milliseconds (polling a provider, a timer). */
  requeueAfterMs?: number;
}

export interface Reconciler {
  /** The kind this reconciler owns. */
  kind: string;
  reconcile(team: string, id: string): Promise<ReconcileResult | void>;
  /** Optional: a source of other changes that call for a look at a resource (what its driver made). Returns a stop. */
  watchExternal?(changed: (team: string, id: string) => void): () => void;
}

export interface ControllerOptions {
  workers: number;
  resyncMs: number;
  logger: Logger;
}

const keyOf = (object: StoredObject<unknown, unknown>) => `${object.meta.team}/${object.meta.id}`;

export class Controller {
  private readonly queue = new WorkQueue();
  private readonly workers: Promise<void>[] = [];
  private unwatch: (() => void) | null = null;
  private unwatchExternal: (() => void) | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private idleWaiters: Array<() => void> = [];
  private busy = 0;

  constructor(
    private readonly store: Store,
    private readonly reconciler: Reconciler,
    private readonly options: ControllerOptions,
  ) {}

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (event.object.meta.kind === this.reconciler.kind && event.type !== 'deleted') this.queue.add(keyOf(event.object));
    });
    this.unwatchExternal = this.reconciler.watchExternal?.((team, id) => this.enqueue(team, id)) ?? null;
    await this.resync();
    this.resyncTimer = setInterval(() => void this.resync(), this.options.resyncMs);
    this.resyncTimer.unref?.();
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

  private async resync(): Promise<void> {
    for (const object of await this.store.list(this.reconciler.kind)) this.queue.add(keyOf(object));
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === null) return;
      this.busy++;
      const [team, id] = key.split('/');
      const endTimer = reconcileDuration.startTimer({ kind: this.reconciler.kind });
      try {
        const result = await this.reconciler.reconcile(team, id);
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
        reconcileCounter.inc({ kind: this.reconciler.kind, result: 'success' });
      } catch (err) {
        const delay = this.queue.addRateLimited(key);
        reconcileCounter.inc({ kind: this.reconciler.kind, result: 'error' });
        this.options.logger.warn({ err, kind: this.reconciler.kind, key, retryInMs: delay }, 'reconcile failed; will retry');
      } finally {
        endTimer();
        this.queue.done(key);
        this.busy--;
        if (this.busy === 0 && this.queue.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    }
  }
}

/**
 * A list-then-watch loop over one Kubernetes collection that does not give up. The
 * client's own informer stops for good on some errors and can stall on a half-open
 * connection; this one relists after 410 Gone, re-watches from the last resourceVersion
 * after any error or close (with capped backoff), and a watchdog aborts a watch that has
 * been silent for longer than the API server's bookmark interval allows.
 */
import { Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backoffMs } from '../../lib/backoff';
import { fieldOf, isRecord, messageOf } from '../../lib/unknown-values';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** `T`: what the collection's objects are read as; its list and its watch events hand them out so typed. */
export interface CollectionSource<T extends KubeObject = KubeObject> {
  /** Path of the collection across namespaces, e.g. /apis/cloudplane.dev/v1alpha1/loadbalancers. */
  path: string;
  labelSelector?: string;
  list(): Promise<{ items: T[]; resourceVersion: string }>;
}

export interface WatcherHandlers<T extends KubeObject = KubeObject> {
  /** The full contents after a (re)list: the receiver reconciles its cache with it. */
  replace(items: T[]): void;
  upsert(object: T): void;
  remove(object: T): void;
}

const nameOf = (err: unknown) => (isRecord(err) ? err.name : undefined);

const MAX_BACKOFF_MS = 10_000;
/** The API server sends a bookmark about once a minute; twice that without a word is a dead watch. */
const SILENCE_LIMIT_MS = 150_000;
/** Server-side timeout of one watch request, so watches are renewed even when all is well. */
const WATCH_TIMEOUT_S = 300;

export class CollectionWatcher<T extends KubeObject = KubeObject> {
  private resourceVersion: string | null = null;
  private abort: AbortController | null = null;
  private stopped = false;
  private failures = 0;
  private lastHeard = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private synced = false;
  /** Whether the watch is established (listed and watching); false while reconnecting. */
  healthy = false;
  private readonly silenceLimitMs: number;

  constructor(
    private readonly watch: Watch,
    private readonly source: CollectionSource<T>,
    private readonly handlers: WatcherHandlers<T>,
    private readonly logger: Logger,
    options: { silenceLimitMs?: number } = {},
  ) {
    this.silenceLimitMs = options.silenceLimitMs ?? SILENCE_LIMIT_MS;
  }

  /** Lists (retrying until it succeeds or stop()) and starts watching. */
  async start(): Promise<void> {
    this.watchdog = setInterval(
      () => {
        this.checkSilence();
      },
      Math.min(this.silenceLimitMs, 10_000),
    );
    this.watchdog.unref();
    await this.cycle();
  }

  hasSynced(): boolean {
    return this.synced;
  }

  stop(): void {
    this.stopped = true;
    this.healthy = false;
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.abort?.abort();
  }

  /** Drops the current watch at once and starts another (the API server came back, say). */
  restartNow(): void {
    this.dropWatch();
  }

  /** Aborts the current watch; the cache may be behind until the next one runs. */
  private dropWatch(): void {
    this.healthy = false;
    this.abort?.abort();
  }

  private async cycle(): Promise<void> {
    while (!this.stopped) {
      try {
        if (this.resourceVersion === null) await this.relist();
        await this.startWatch();
        return;
      } catch (err) {
        this.healthy = false;
        await this.backoff(err);
      }
    }
  }

  private async relist(): Promise<void> {
    // A warning: the watch fell behind the API server's history, and a relist reads the
    // whole collection again, which on a large install is felt.
    if (this.synced) this.logger.warn({ path: this.source.path }, 'relisting: the version the watch was at is gone');
    const { items, resourceVersion } = await this.source.list();
    // Stopped while the list was in flight (a team namespace gone): its followers forgot it already.
    if (this.stopped) return;
    this.handlers.replace(items);
    this.resourceVersion = resourceVersion;
    this.synced = true;
  }

  private async startWatch(): Promise<void> {
    const query: Record<string, string | number | boolean | undefined> = {
      resourceVersion: this.resourceVersion ?? undefined,
      allowWatchBookmarks: true,
      timeoutSeconds: WATCH_TIMEOUT_S,
      labelSelector: this.source.labelSelector,
    };
    this.lastHeard = Date.now();
    let ended = false;
    const controller = await this.watch.watch(
      this.source.path,
      query,
      // The API server's watch events, as the client hands them on: an object of the collection, or a Status.
      (phase: string, object: T & { code?: number; reason?: string }) => {
        this.onEvent(phase, object);
      },
      (err: unknown) => {
        if (ended) return;
        ended = true;
        if (this.abort === controller) this.abort = null;
        // A watch the server closed at its timeout is renewed at once and the cache is no
        // less current meanwhile; anything else leaves it behind until the next watch runs.
        if (err) this.healthy = false;
        if (this.stopped) return;
        if (err && nameOf(err) !== 'AbortError') this.logger.warn({ path: this.source.path, err: messageOf(err) }, 'watch ended; re-establishing');
        // Every end of a watch, clean or not, leads to a new one from the last version seen.
        void this.backoff(err ? err : null).then(() => this.cycle());
      },
    );
    this.abort = controller;
    this.healthy = true;
    this.failures = 0;
  }

  private onEvent(phase: string, object: T & { code?: number; reason?: string }): void {
    // An event already on its way when the watch was stopped must not bring back what was forgotten.
    if (this.stopped) return;
    this.lastHeard = Date.now();
    if (phase === 'ERROR') {
      // 410 Gone: the version we watch from was compacted away; only a relist helps.
      // Its object is a Status, not one of the collection: read for what it may hold.
      const [code, reason] = [fieldOf(object, 'code'), fieldOf(object, 'reason')];
      if (code === 410 || reason === 'Expired' || reason === 'Gone') this.resourceVersion = null;
      this.dropWatch();
      return;
    }
    const version = fieldOf(fieldOf(object, 'metadata'), 'resourceVersion');
    if (typeof version === 'string' && version) this.resourceVersion = version;
    if (phase === 'BOOKMARK') return;
    if (phase === 'DELETED') this.handlers.remove(object);
    else if (phase === 'ADDED' || phase === 'MODIFIED') this.handlers.upsert(object);
  }

  private checkSilence(): void {
    if (this.stopped || !this.abort) return;
    if (Date.now() - this.lastHeard > this.silenceLimitMs) {
      // Routine for a collection nobody writes to (the API server sends it no bookmarks).
      this.logger.debug({ path: this.source.path }, 'watch silent for too long; re-establishing');
      this.lastHeard = Date.now();
      this.dropWatch();
    }
  }

  /** `err`: what ended the last try (null or nothing for a clean end, which is retried at once). */
  private backoff(err: unknown): Promise<void> {
    if (err && /\b410\b|Gone|Expired/.test(String(messageOf(err)))) this.resourceVersion = null;
    const delay = err ? backoffMs(this.failures++, 200, MAX_BACKOFF_MS) : 0;
    return new Promise((resolve) => {
      this.retryTimer = setTimeout(resolve, delay);
      // Once started, retrying against a gone API server alone must not keep a process alive
      // (the service's listener does); before the first list, start() is waiting on it.
      if (this.synced) this.retryTimer.unref();
    });
  }
}

/**
 * A write the service must make sooner or later but that no client waits for: consumer
 * positions, a snapshot of the store, a compaction of the event log, or the probe that
 * clears a failed append. It runs when asked (coalescing requests), never overlaps
 * itself, and never throws: a failure is reported to the data directory's health and
 * retried with capped exponential backoff, each retry after a cheap probe of the
 * directory (a full disk is not handed a large snapshot every few seconds); a success
 * clears the failure.
 */
import type { DataDirHealth } from './data-dir-health';
import { backoffMs } from '../lib/backoff';

export interface RetryTiming {
  baseMs: number;
  maxMs: number;
}

/** 200 ms, doubling to 10 s: recovery follows the disk within seconds, at one small probe a period. */
export const DEFAULT_RETRY: RetryTiming = { baseMs: 200, maxMs: 10_000 };

export class BackgroundWrite {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** Asked for again while running: run once more after. */
  private again = false;
  private failures = 0;
  private stopped = false;

  constructor(
    private readonly source: string,
    private readonly write: () => void | Promise<void>,
    private readonly health: DataDirHealth,
    private readonly retry: RetryTiming = DEFAULT_RETRY,
  ) {}

  /** True while the last attempt failed and a retry is due. */
  get failing(): boolean {
    return this.failures > 0;
  }

  /** Runs the write after `delayMs`, unless a run is already due (a retry keeps its backoff). */
  request(delayMs = 0): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (!this.timer) this.schedule(delayMs);
  }

  /** Runs the write now if one is due or failing (e.g. a last save on stop); reports, never throws. */
  async flush(): Promise<void> {
    await this.running;
    if (!this.timer && !this.again) return;
    this.clearTimer();
    this.again = false;
    await this.run();
  }

  /** No more runs or retries; waits for one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.running;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.run();
    }, delayMs);
    // A pending retry must not keep a process alive that has nothing else to do.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private run(): Promise<void> {
    this.running = this.attempt().finally(() => {
      this.running = null;
      if (this.again && !this.stopped) {
        this.again = false;
        this.request();
      }
    });
    return this.running;
  }

  private async attempt(): Promise<void> {
    try {
      if (this.failures > 0) this.health.probe();
      await this.write();
      this.failures = 0;
      this.health.recovered(this.source);
    } catch (err) {
      this.failures++;
      this.health.failed(this.source, err);
      if (!this.stopped && !this.timer) this.schedule(backoffMs(this.failures - 1, this.retry.baseMs, this.retry.maxMs));
    }
  }
}

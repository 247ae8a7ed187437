/**
 * Upkeep of the store's secrets, run by the leader every CLOUDPLANE_SECRET_SWEEP_SECONDS:
 * a webhook's previous secret is dropped once its rotation overlap has ended, so a
 * rotated-away secret is kept no longer than it signs.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/types';
import { webhookSecretName } from '../resources/webhook';
import { dropExpiredPrevious } from '../webhooks/secrets';

export interface SecretSweeperOptions {
  store: Store;
  logger: Logger;
  intervalMs: number;
}

export interface SweepResult {
  /** Webhook secrets whose expired previous secret was dropped. */
  droppedPrevious: number;
}

export class SecretSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly o: SecretSweeperOptions) {}

  /** Sweeps at once, then every interval, until stopped. */
  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass over every secret; `now` places it in time (tests). */
  async sweep(now = Date.now()): Promise<SweepResult> {
    const result: SweepResult = { droppedPrevious: 0 };
    // A store that cannot write, or whose cache may lag (a watch re-establishing), waits for the next pass.
    if (this.o.store.persistence() !== 'synced') return result;
    for (const secret of await this.o.store.listSecrets(webhookSecretName(''))) {
      if (await dropExpiredPrevious(this.o.store, secret, now)) result.droppedPrevious++;
    }
    return result;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sweep()
        .catch((err: Error) => this.o.logger.warn({ err: err.message }, 'secret sweep failed; trying again at the next one'))
        .finally(() => {
          this.running = null;
          this.schedule(this.o.intervalMs);
        });
    }, delayMs);
  }
}

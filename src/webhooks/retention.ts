/**
 * Bounded webhook history, on the leader: a periodic sweep removes every delivery that
 * finished (succeeded or failed) longer than the retention ago, counted from its last
 * attempt, so a delivery retried for a day still shows its whole history for the full
 * retention after it ended. Pending deliveries are never removed: they end within 24
 * hours of their first attempt, or wait, held, for their paused subscription.
 *
 * A deleted subscription is removed once none of its deliveries is left and its deletion
 * is older than the retention, so its history and its record go together and nothing of
 * it stays (its secret went at deletion; removing it again is harmless).
 *
 * Each removal is conditional on the version read, so a manual retry that makes a
 * delivery pending again wins over the sweep. A store error skips the record (or the
 * pass); the next pass tries again.
 */
import type { Logger } from 'pino';
import { ConflictError, NotFoundError, Store } from '../store/types';
import type { WebhookConfig } from '../config';
import { Delivery, deliveryFamily, Webhook, webhookFamily } from '../resources/webhook';
import { deleteSecret } from './secrets';
import { webhookRecordsRemoved, webhookRetentionFailures } from '../metrics';
import { textOf } from '../lib/unknown-values';
import type { ResourceWriter } from '../resources/writer';
import { eachObject } from '../store/listed';

const MIN_INTERVAL_MS = 1_000;
const MAX_INTERVAL_MS = 10 * 60_000;
const FINISHED = ['succeeded', 'failed'];
/**
 * Removals made at once. One after the other, each waited for its own disk flush (or API
 * round trip) behind everything else the service was doing: under steady load the sweep
 * removed fewer records than the load made, and the store grew without end.
 */
const REMOVALS_AT_ONCE = 64;

async function inBatches<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += REMOVALS_AT_ONCE) await Promise.all(items.slice(i, i + REMOVALS_AT_ONCE).map(work));
}

export interface RetentionDeps {
  store: Store;
  config: WebhookConfig;
  logger: Logger;
  /** Whether a record's outbox is all on the bus (ResourceWriter.relayed). */
  writer: Pick<ResourceWriter, 'relayed'>;
}

export interface SweepResult {
  deliveries: number;
  webhooks: number;
  failures: number;
}

/** A tenth of the retention, within 1 s and 10 min: records go at most ~10 % past their time. */
export const sweepIntervalMs = (retentionMs: number) => Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, retentionMs / 10));

export class WebhookRetention {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly deps: RetentionDeps) {}

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweep().finally(() => {
        this.schedule(sweepIntervalMs(this.deps.config.deliveryRetentionMs));
      });
    }, delayMs);
  }

  /** One pass; never throws. */
  async sweep(now = Date.now()): Promise<SweepResult> {
    const { store, config, logger } = this.deps;
    const result: SweepResult = { deliveries: 0, webhooks: 0, failures: 0 };
    const cutoff = now - config.deliveryRetentionMs;
    try {
      const left = new Set<string>();
      const expiredDeliveries: Delivery[] = [];
      // One at a time: the deliveries of a retention are the most numerous objects of all.
      for await (const delivery of eachObject<Delivery['spec'], Delivery['status']>(store, deliveryFamily.kind)) {
        const expired = FINISHED.includes(delivery.status.status) && Date.parse(delivery.meta.updatedAt) <= cutoff;
        if (expired) expiredDeliveries.push(delivery);
        else left.add(`${delivery.meta.team}/${delivery.spec.webhook_id}`);
      }
      await inBatches(expiredDeliveries, async (delivery) => {
        if (await this.remove(delivery, result)) result.deliveries++;
        else left.add(`${delivery.meta.team}/${delivery.spec.webhook_id}`);
      });
      const webhooks = await store.list<Webhook['spec'], Webhook['status']>(webhookFamily.kind);
      const gone = webhooks.filter((webhook) => {
        const { meta, status } = webhook;
        const deletedLongAgo = status.status === 'deleted' && status.deleted_at !== null && Date.parse(status.deleted_at) <= cutoff;
        // Its events reach the bus before the record goes.
        return deletedLongAgo && this.deps.writer.relayed(webhook) && !left.has(`${meta.team}/${meta.id}`);
      });
      await inBatches(gone, async (webhook) => {
        if (await this.remove(webhook, result)) result.webhooks++;
        // Gone with its deletion already; a crash between the two could have left it.
        await deleteSecret(store, webhook.meta.team, webhook.meta.id).catch(() => result.failures++);
      });
    } catch (err) {
      result.failures++;
      logger.warn({ err: textOf(err) }, 'webhook retention pass failed; the next pass tries again');
    }
    webhookRecordsRemoved.inc({ kind: 'delivery' }, result.deliveries);
    webhookRecordsRemoved.inc({ kind: 'webhook' }, result.webhooks);
    webhookRetentionFailures.inc(result.failures);
    if (result.deliveries || result.webhooks || result.failures) logger.info({ ...result }, 'webhook retention pass');
    return result;
  }

  /** Removes the record as read; false when it changed meanwhile, is gone, or the store refused. */
  private async remove(object: Delivery | Webhook, result: SweepResult): Promise<boolean> {
    const { kind, team, id, resourceVersion } = object.meta;
    try {
      await this.deps.store.remove(kind, team, id, resourceVersion);
      return true;
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return false;
      result.failures++;
      this.deps.logger.warn({ kind, id, err: textOf(err) }, 'webhook retention could not remove a record; the next pass tries again');
      return false;
    }
  }
}

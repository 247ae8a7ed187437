/**
 * The record of one delivery attempt, whoever made it: the dispatcher's HTTP POST, or a
 * `cloudplane listen` listener's answer (webhooks/listener-hub.ts). The next attempt
 * follows the retry schedule; the write is a compare-and-swap on the attempt number, so
 * of two outcomes of the same attempt (a late answer and a timeout, two replicas at a
 * lease's edge) only the first is kept.
 */
import type { WebhookConfig } from '../config';
import type { ResourceWriter } from '../resources/writer';
import { Delivery, deliveryFamily } from '../resources/webhook';
import { nextAttemptAt, retryAfterMs } from './schedule';
import type { AttemptResult } from './sender';

const SYSTEM = 'system';

/** Records `result` as attempt `delivery.status.attempt + 1`; false when another outcome of it got there first. */
export async function recordAttempt(
  writer: ResourceWriter,
  config: Pick<WebhookConfig, 'timeScale'>,
  delivery: Delivery,
  result: AttemptResult,
  startedAt: number,
  answeredAt = Date.now(),
): Promise<boolean> {
  const attempt = delivery.status.attempt + 1;
  const firstAt = delivery.status.first_attempt_at ? Date.parse(delivery.status.first_attempt_at) : startedAt;
  const next = result.ok || delivery.status.single_attempt ? null : nextAttemptAt(attempt, firstAt, startedAt, config.timeScale, retryNotBefore(result, answeredAt, config.timeScale));
  return finishAttempt(writer, delivery, {
    status: result.ok ? 'succeeded' : next === null ? 'failed' : 'pending',
    attempt,
    first_attempt_at: new Date(firstAt).toISOString(),
    next_retry_at: next === null ? null : new Date(next).toISOString(),
    response_status: result.status,
    error: result.error,
    single_attempt: false,
  });
}

/** Retry-After counts from the answer (HTTP), not from when the attempt began. */
function retryNotBefore(result: AttemptResult, answeredAt: number, timeScale: number): number | undefined {
  if (result.status !== 429 && result.status !== 503) return undefined;
  const wait = retryAfterMs(result.retryAfter, answeredAt, timeScale);
  return wait === undefined ? undefined : answeredAt + wait;
}

/** Writes an attempt's outcome unless another attempt of the same delivery got there first. */
export async function finishAttempt(writer: ResourceWriter, delivery: Delivery, changes: Partial<Delivery['status']>): Promise<boolean> {
  let written = false;
  await writer.mutateStatus<Delivery>(
    deliveryFamily,
    delivery.meta.team,
    delivery.meta.id,
    (latest) => {
      if (latest.status.attempt !== delivery.status.attempt || latest.status.status !== 'pending') return null;
      written = true;
      return changes;
    },
    SYSTEM,
  );
  return written;
}

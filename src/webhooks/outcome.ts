/**
 * The record of one delivery attempt, whoever made it: the dispatcher's HTTP POST, or a
 * `cloudplane listen` listener's answer (webhooks/listener-hub.ts). The next attempt
 * follows the retry schedule; the write is a compare-and-swap on the attempt number, so
 * of two outcomes of the same attempt (a late answer and a timeout, two replicas at a
 * lease's edge) only the first is kept.
 */
import type { WebhookConfig } from '../config';
import type { ResourceWriter } from '../resources/writer';
import { Delivery, DeliveryAttempt, deliveryFamily, MAX_KEPT_ATTEMPTS } from '../resources/webhook';
import type { CloudEvent } from '../resources/cloud-event';
import { newId } from '../lib/ids';
import { nextAttemptAt, retryAfterMs } from './schedule';
import type { AttemptResult } from './sender';
import { asStored } from '../resources/family';

export const DELIVERY_FAILED = 'webhook.delivery_failed';

const SYSTEM = 'system';

/** An attempt's outcome as the delivery recorded it: when it is tried again (null: never). */
export interface RecordedAttempt {
  nextRetryAt: string | null;
}

/** Records `result` as attempt `delivery.status.attempt + 1`; null when another outcome of it got there first. */
export async function recordAttempt(
  writer: ResourceWriter,
  config: Pick<WebhookConfig, 'timeScale'>,
  delivery: Delivery,
  result: AttemptResult,
  startedAt: number,
  answeredAt = Date.now(),
): Promise<RecordedAttempt | null> {
  const attempt = delivery.status.attempt + 1;
  const firstAt = delivery.status.first_attempt_at ? Date.parse(delivery.status.first_attempt_at) : startedAt;
  const next =
    result.ok || delivery.status.single_attempt
      ? null
      : nextAttemptAt(attempt, firstAt, startedAt, config.timeScale, retryNotBefore(result, answeredAt, config.timeScale));
  const entry: DeliveryAttempt = {
    attempt,
    at: new Date(startedAt).toISOString(),
    response_status: result.status,
    latency_ms: result.latencyMs ?? null,
    response_body: result.responseBody ?? null,
    error: result.error,
  };
  const exhausted = !result.ok && next === null;
  const written = await finishAttempt(writer, delivery, {
    status: result.ok ? 'succeeded' : exhausted ? 'failed' : 'pending',
    attempt,
    first_attempt_at: new Date(firstAt).toISOString(),
    next_retry_at: next === null ? null : new Date(next).toISOString(),
    response_status: result.status,
    error: result.error,
    single_attempt: false,
    attempts: [...(delivery.status.attempts ?? []), entry].slice(-MAX_KEPT_ATTEMPTS),
    // In the same write as the outcome (the outbox), so the event is told once and never lost.
    ...(exhausted && !delivery.status.single_attempt
      ? { pending_events: [...(asStored(delivery.status).pending_events ?? []), ...deliveryFailedEvent(delivery, attempt, result.error)] }
      : {}),
  });
  return written ? { nextRetryAt: next === null ? null : new Date(next).toISOString() } : null;
}

/**
 * `webhook.delivery_failed` for a delivery that ran out of its scheduled attempts (a manual
 * retry's one attempt failing is answered to whoever asked for it, not told again); none for the failed
 * delivery of a `webhook.delivery_failed` itself. Two subscriptions whose receivers are
 * both down would otherwise tell each other of their failures forever, each failure a new
 * event for the other (the dispatcher already keeps a subscription's own failure from it).
 */
function deliveryFailedEvent(delivery: Delivery, attempts: number, lastError: string | null): CloudEvent[] {
  if (delivery.spec.event_type === DELIVERY_FAILED) return [];
  return [
    {
      id: newId('evt'),
      type: DELIVERY_FAILED,
      created_at: new Date().toISOString(),
      team_id: delivery.meta.team,
      actor: SYSTEM,
      data: {
        subscription_id: delivery.spec.webhook_id,
        delivery_id: delivery.meta.id,
        event_id: delivery.spec.event_id,
        event_type: delivery.spec.event_type,
        attempts,
        last_error: lastError,
      },
    },
  ];
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

/**
 * Manual retries, shared by the history and the failed-deliveries pages: POST .../retry
 * (202, the delivery pending again), then tell the user through the page's live region
 * how the attempt ended, once a later look shows it finished.
 */
import { api } from '../../lib/api';
import { problemOf } from '../kit/problems';
import type { Delivery } from './types';

export class Retries {
  retrying = $state<Record<string, boolean>>({});
  announcement = $state('');
  /** Deliveries retried by the user whose outcome has not been told yet, with the time of the retry. */
  private awaiting = new Map<string, { webhookId: string; retriedAt: string }>();

  async retry(delivery: Delivery): Promise<Delivery | null> {
    this.retrying[delivery.id] = true;
    try {
      const pending = await api.post<Delivery>(`/webhooks/${delivery.webhook_id}/deliveries/${delivery.id}/retry`);
      this.awaiting.set(delivery.id, { webhookId: delivery.webhook_id, retriedAt: pending.updated_at });
      this.announcement = `Retrying delivery ${delivery.id} (${delivery.event_type}) now.`;
      return pending;
    } catch (err) {
      this.announcement = `Could not retry delivery ${delivery.id}: ${problemOf(err).message}`;
      return null;
    } finally {
      this.retrying[delivery.id] = false;
    }
  }

  /**
   * Called with every fresh list: announces the end of each retried delivery once. One the
   * list leaves out (it shows failed ones only, and this one succeeded) is read by itself.
   */
  async observe(listed: Delivery[]): Promise<void> {
    const missing = [...this.awaiting].filter(([id]) => !listed.some((d) => d.id === id));
    const fetched = await Promise.all(missing.map(([id, { webhookId }]) => api.get<Delivery>(`/webhooks/${webhookId}/deliveries/${id}`).catch(() => null)));
    for (const delivery of [...listed, ...fetched]) {
      const awaited = delivery && this.awaiting.get(delivery.id);
      // A look from before the retry still shows the old outcome: wait for a later one.
      if (!delivery || !awaited || delivery.status === 'pending' || Date.parse(delivery.updated_at) <= Date.parse(awaited.retriedAt)) continue;
      this.awaiting.delete(delivery.id);
      this.announcement =
        delivery.status === 'succeeded'
          ? `Delivery ${delivery.id} succeeded on attempt ${delivery.attempt}.`
          : `Delivery ${delivery.id} failed again on attempt ${delivery.attempt}: ${delivery.error ?? 'no reason given'}.`;
    }
  }
}

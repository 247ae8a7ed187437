/**
 * Manual retries, shared by the history and the failed-deliveries pages: POST .../retry
 * (202, the delivery pending again), then tell the user through the page's live region
 * how the attempt ended once a later poll shows it finished.
 */
import { api } from '../../lib/api';
import { problemOf } from '../kit/problems';
import type { Delivery } from './types';

export class Retries {
  retrying = $state<Record<string, boolean>>({});
  announcement = $state('');
  /** Deliveries retried by the user whose outcome has not been told yet, with the time of the retry. */
  private awaiting = new Map<string, string>();

  async retry(delivery: Delivery): Promise<Delivery | null> {
    this.retrying[delivery.id] = true;
    try {
      const pending = await api.post<Delivery>(`/webhooks/${delivery.webhook_id}/deliveries/${delivery.id}/retry`);
      this.awaiting.set(delivery.id, pending.updated_at);
      this.announcement = `Retrying delivery ${delivery.id} (${delivery.event_type}) now.`;
      return pending;
    } catch (err) {
      this.announcement = `Could not retry delivery ${delivery.id}: ${problemOf(err).message}`;
      return null;
    } finally {
      this.retrying[delivery.id] = false;
    }
  }

  /** Called with every fresh list: announces the end of each retried delivery once. */
  observe(deliveries: Delivery[]): void {
    for (const delivery of deliveries) {
      const retriedAt = this.awaiting.get(delivery.id);
      // A poll answered from before the retry still shows the old outcome: wait for a later one.
      if (!retriedAt || delivery.status === 'pending' || Date.parse(delivery.updated_at) <= Date.parse(retriedAt)) continue;
      this.awaiting.delete(delivery.id);
      this.announcement =
        delivery.status === 'succeeded'
          ? `Delivery ${delivery.id} succeeded on attempt ${delivery.attempt}.`
          : `Delivery ${delivery.id} failed again on attempt ${delivery.attempt}: ${delivery.error ?? 'no reason given'}.`;
    }
  }
}

/**
 * The usage recorder: a durable bus consumer (like the agent's alert feed) that turns the
 * lifecycle events of metered families into usage intervals in the store. Its position on
 * the bus survives restarts; across replicas it runs on the leader, and on NATS a durable
 * consumer hands each event to one reader. A redelivered event changes nothing
 * (metering.ts applyEvent), so at-least-once delivery meters once.
 */
import type { Logger } from 'pino';
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import type { Store } from '../store/types';
import { applyEvent, meteredSubject } from './metering';
import { intervalFromRecord, intervalName, intervalToRecord, swapUntilDone } from './records';

export const USAGE_CONSUMER = 'usage';

export class IntervalRecorder {
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly store: Store,
    private readonly logger: Logger,
  ) {}

  start(): Promise<void> {
    if (!this.unsubscribe) this.unsubscribe = this.bus.subscribe(USAGE_CONSUMER, (event) => this.record(event));
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    return Promise.resolve();
  }

  /** Throws when the store refuses a write, so the bus hands the event over again. */
  private async record(event: CloudEvent): Promise<void> {
    const subject = meteredSubject(event);
    if (!subject) return;
    await swapUntilDone(this.store, event.team_id, intervalName(subject.id), (current) => {
      const next = applyEvent(current && intervalFromRecord(current), subject.metered, subject.id, event);
      return next && intervalToRecord(next);
    });
    this.logger.debug({ team: event.team_id, resource: subject.id, type: event.type }, 'usage interval recorded');
  }
}

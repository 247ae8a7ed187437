/**
 * The agent's feed: a durable bus consumer that posts each alert (see alerts.ts) into one
 * thread per team, "Alerts", where the whole team reads it through the agent API.
 *
 * Redelivery is harmless: the thread's id is derived from the team and each message's
 * id from its event's id, so a second delivery (after a crash, a restart or a NATS
 * redelivery) finds them already there and posts nothing.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import type { ResourceWriter } from '../resources/writer';
import { AlreadyExistsError } from '../store/types';
import { messageFamily, Message, MessageSpec, Thread, threadFamily } from '../resources/agent';
import { alertMessage, alertOf } from './alerts';
import { asStored } from '../resources/family';

export const ALERT_CONSUMER = 'agent';
export const ALERT_THREAD_TITLE = 'Alerts';
/** Alerts older than this when first seen (a new consumer reading an old log) are history, not news. */
const MAX_ALERT_AGE_MS = 24 * 3_600_000;

/** The id of a team's alert thread: the same on every replica and after every restart. */
export function alertThreadId(team: string): string {
  return `thr_${createHash('sha256').update(`cloudplane-alerts\u0000${team}`).digest('hex').slice(0, 26)}`;
}

/** `evt_abc…` -> `msg_abc…`: one message per event, whatever the number of deliveries. */
const messageIdFor = (eventId: string) => `msg_${eventId.slice(eventId.indexOf('_') + 1)}`;

export class AlertFeed {
  private unsubscribe: (() => void) | null = null;
  /** Teams whose alert thread is known to exist, to spare the store a refused create per alert. */
  private readonly threadsSeen = new Set<string>();

  constructor(
    private readonly bus: EventBus,
    private readonly writer: ResourceWriter,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.bus.subscribe(ALERT_CONSUMER, (event) => this.handle(event));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** Throws when the store refuses a write, so the bus hands the event over again. */
  private async handle(event: CloudEvent): Promise<void> {
    const alert = alertOf(event);
    if (!alert || Date.now() - Date.parse(event.created_at) > MAX_ALERT_AGE_MS) return;
    const threadId = await this.ensureThread(event.team_id);
    let message: Message;
    try {
      const spec: MessageSpec = { thread_id: threadId, role: 'event', content: alertMessage(event, alert) };
      message = await this.writer.create(messageFamily, event.team_id, spec, 'system', messageIdFor(event.id));
    } catch (err) {
      if (err instanceof AlreadyExistsError) return;
      throw err;
    }
    await this.writer.mutateStatus<Thread>(
      threadFamily,
      event.team_id,
      threadId,
      (thread) => {
        const previous = thread.status.last_message_at;
        return {
          message_count: (asStored(thread.status).message_count ?? 0) + 1,
          // ISO times in UTC: the later one is the greater text.
          last_message_at: previous && previous > message.meta.createdAt ? previous : message.meta.createdAt,
        };
      },
      'system',
    );
    this.logger.info({ team: event.team_id, eventId: event.id, type: event.type, messageId: message.meta.id }, 'agent posted an alert');
  }

  private async ensureThread(team: string): Promise<string> {
    const id = alertThreadId(team);
    if (this.threadsSeen.has(team)) return id;
    try {
      await this.writer.create(threadFamily, team, { title: ALERT_THREAD_TITLE }, 'system', id);
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
    this.threadsSeen.add(team);
    return id;
  }
}

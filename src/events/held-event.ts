/**
 * An event kept in memory for long: by the embedded bus for its retention (30 days by
 * default), by the audit log for its search. Parsed, an event and the copy of its
 * resource in `data` are some 30 objects and strings, about 1.85 KB; its JSON text is
 * about 550 bytes. At 100,000 load balancers with three events each that difference was
 * a third of the service's heap, and every major garbage collection marked it again. So
 * the event is held as its text beside the few fields it is looked up by, and parsed
 * again when read: by a consumer, or for a page of the audit log.
 */
import type { CloudEvent } from './types';

export interface HeldEvent {
  readonly id: string;
  readonly team_id: string;
  readonly created_at: string;
  /** The event's JSON. */
  readonly text: string;
}

export const holdEvent = (event: CloudEvent, text = JSON.stringify(event)): HeldEvent => ({ id: event.id, team_id: event.team_id, created_at: event.created_at, text });

export const parseEvent = (text: string): CloudEvent => JSON.parse(text) as CloudEvent;

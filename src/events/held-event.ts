/**
 * An event kept in memory for long: by the embedded bus for its retention (30 days by
 * default), by the audit log for its search. Parsed, an event with the copy of its
 * resource in `data` is some 30 objects and strings for every garbage collection to
 * mark, for as long as it is kept; held, it is its JSON text, one string shared by the
 * bus and the audit log, beside the few fields it is looked up by, and parsed again when
 * read: by a consumer, or for a page of the audit log. Measured on the embedded store
 * (bench/memory.ts, 20,000 load balancers): a third fewer strings per load balancer and
 * 3 % less heap; the parsed events' strings were mostly shared with the store's own
 * objects there, which the Kubernetes store's cache replaces on every watch event.
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

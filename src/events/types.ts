/** The bus that carries the event envelope (resources/cloud-event.ts). */
import type { CloudEvent } from '../resources/cloud-event';

export type EventHandler = (event: CloudEvent) => Promise<void>;

export interface SubscribeOptions {
  /**
   * How many events the handler may have at once (default 1: strictly one after the
   * other, in order). Above 1, events in flight together may finish in any order, and a
   * handler that throws holds up only its own event; for handlers whose work on one event
   * does not depend on the one before (the webhook dispatcher), so their writes share disk
   * flushes instead of queuing for one each.
   */
  concurrency?: number;
}

export interface EventBus {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once the event is durable. Publishing an id that was already published is a no-op. */
  publish(event: CloudEvent): Promise<void>;
  /**
   * A durable consumer: `name` remembers how far it got across restarts. Each event is
   * handed to `handler` in order (see `concurrency`), at least once; a handler that throws
   * gets the same event again after a pause. Returns an unsubscribe.
   */
  subscribe(name: string, handler: EventHandler, options?: SubscribeOptions): () => void;
  /** The events each durable consumer subscribed here has yet to finish (cloudplane_event_consumer_pending). */
  pending(): Promise<Record<string, number>>;
  /** Events of a team created at or after `since`, oldest first. */
  recent(team: string, since: string): Promise<CloudEvent[]>;
  /**
   * Every event from `since` on, then each new one as it is published, without a durable
   * position: for consumers that keep a view of the stream in memory (the audit log).
   * `text` is the event's JSON, for a follower that keeps it as text, outside the heap
   * (the audit log, text-arena.ts). Returns a stop function.
   */
  follow(since: string, handler: (event: CloudEvent, text: string) => void): () => void;
}

/** The category of an event type: `load_balancer` for `load_balancer.running`. */
export const categoryOf = (type: string): string => type.slice(0, type.indexOf('.'));

/** An event from its JSON text, as the bus and the audit log keep it. */
export const parseEvent = (text: string): CloudEvent => JSON.parse(text) as CloudEvent;

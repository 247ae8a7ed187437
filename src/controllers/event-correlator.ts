/**
 * Which Kubernetes Events are written, and which only raise a count, after client-go's
 * EventCorrelator (k8s.io/client-go/tools/record/events_cache.go), so that a burst of
 * changes costs the API server a handful of writes rather than one per change:
 * - **a repeat** (same object, type, reason and message within the window) raises the
 *   count of the Event already written;
 * - **similar events** (same namespace, kind, type and reason, other objects) are written
 *   one by one up to `similarLimit` within the window; beyond that they are combined into
 *   one Event per kind of change, "(combined from similar events): …", whose count grows
 *   and which names the latest object.
 * Counts are written in batches (EventCorrelator.dirty, flushed by the recorder), so a
 * burst raises a count with one write however many changes it held.
 *
 * Pure bookkeeping: the recorder (events-recorder.ts) makes the API calls.
 */

/** The involved object and its change, as the recorder describes it. */
export interface CorrelatedEvent {
  namespace: string;
  kind: string;
  /** The involved object's uid: which object a repeat is of. */
  uid: string;
  type: string;
  reason: string;
  message: string;
}

/** One Event as written: its name once created, and the count and message last written or due. */
export interface EventSeries {
  readonly key: string;
  readonly namespace: string;
  /** The Event's name, chosen on creation. */
  name: string;
  count: number;
  /** The count the API server has; below `count` while an update is due. */
  writtenCount: number;
  message: string;
  /** The latest change's event: for a combined Event, the object it names now. */
  latest: CorrelatedEvent;
  firstAt: number;
  lastAt: number;
}

export type Correlation = { create: EventSeries } | { counted: EventSeries };

/** client-go's values: 10 similar events within 10 minutes before they are combined. */
export const SIMILAR_LIMIT = 10;
export const CORRELATION_WINDOW_MS = 600_000;
/** Events whose counts may still rise, kept at most (client-go's cache holds 4,096). */
export const MAX_SERIES = 4_096;

export const COMBINED_PREFIX = '(combined from similar events): ';

export class EventCorrelator {
  private readonly series = new Map<string, EventSeries>();
  private readonly similar = new Map<string, { since: number; seen: number }>();
  private readonly due = new Set<EventSeries>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly similarLimit = SIMILAR_LIMIT,
    private readonly windowMs = CORRELATION_WINDOW_MS,
  ) {}

  /** Whether `event` is a new Event to create, or counted into one already written. */
  correlate(event: CorrelatedEvent): Correlation {
    const now = this.now();
    const repeat = this.live(`${event.namespace}/${event.uid}/${event.type}/${event.reason}/${event.message}`, now);
    if (repeat) return { counted: this.count(repeat, event, event.message, now) };

    const similarKey = `${event.namespace}/${event.kind}/${event.type}/${event.reason}`;
    let group = this.similar.get(similarKey);
    if (!group || now - group.since > this.windowMs) this.similar.set(similarKey, (group = { since: now, seen: 0 }));
    group.seen++;
    if (group.seen <= this.similarLimit)
      return { create: this.start(`${event.namespace}/${event.uid}/${event.type}/${event.reason}/${event.message}`, event, event.message, now) };

    const message = `${COMBINED_PREFIX}${event.message}`;
    const combined = this.live(`combined/${similarKey}`, now);
    if (combined) return { counted: this.count(combined, event, message, now) };
    return { create: this.start(`combined/${similarKey}`, event, message, now) };
  }

  /** The Events whose count or message changed since they were last written; taken, so each is handed out once. */
  takeDue(): EventSeries[] {
    const due = [...this.due];
    this.due.clear();
    return due;
  }

  /** An update that failed: due again with the next batch. */
  retry(series: EventSeries): void {
    if (this.series.get(series.key) === series) this.due.add(series);
  }

  /** A creation that failed: the next change of its kind starts a new Event. */
  forget(series: EventSeries): void {
    if (this.series.get(series.key) === series) this.series.delete(series.key);
    this.due.delete(series);
  }

  private live(key: string, now: number): EventSeries | undefined {
    const series = this.series.get(key);
    if (series && now - series.firstAt <= this.windowMs) return series;
    if (series) this.forget(series);
    return undefined;
  }

  private start(key: string, event: CorrelatedEvent, message: string, now: number): EventSeries {
    const series: EventSeries = { key, namespace: event.namespace, name: '', count: 1, writtenCount: 1, message, latest: event, firstAt: now, lastAt: now };
    this.series.set(key, series);
    // The oldest go first: a Map iterates in insertion order.
    while (this.series.size > MAX_SERIES) {
      const [oldest] = this.series.values();
      this.forget(oldest);
    }
    for (const [similarKey, group] of this.similar) if (now - group.since > this.windowMs) this.similar.delete(similarKey);
    return series;
  }

  private count(series: EventSeries, event: CorrelatedEvent, message: string, now: number): EventSeries {
    series.count++;
    series.message = message;
    series.latest = event;
    series.lastAt = now;
    this.due.add(series);
    return series;
  }
}

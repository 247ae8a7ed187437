/**
 * The audit log: a searchable view of the event stream, per team. It follows the bus
 * from the start of the retention period, so it is rebuilt from the stream on every
 * start and needs no store of its own; the stream (the embedded log, or JetStream with
 * its max age) is the record.
 *
 * Each team's events are kept in ordered indexes (B+ trees keyed by time, then id): one
 * of all of them, and one per value of each equality filter (type, category, resource,
 * actor). A page walks the most selective index that applies from the cursor (or the
 * window's edge) and checks the other filters on the way, so its cost follows the page
 * and the filters' selectivity, not the size of the team's history.
 */
import BTree from 'sorted-btree';
import type { CloudEvent, EventBus } from '../events/types';
import { categoryOf } from '../events/types';

export interface AuditFilter {
  /** An exact type, or `category.*`. */
  type?: string;
  /** The id of the resource the event is about (its `data.id`). */
  resource_id?: string;
  actor?: string;
  /** Inclusive lower bound on created_at. */
  since?: string;
  /** Exclusive upper bound on created_at. */
  until?: string;
  /** Case-insensitive text anywhere in the event. */
  q?: string;
}

export interface AuditPageRequest {
  order: 'asc' | 'desc';
  /** Position of the previous page's last event; the page starts strictly after it. */
  after?: { created_at: string; id: string };
  /** Without one, every match (the agent reads whole histories of one resource or window). */
  limit?: number;
}

type EventIndex = BTree<string, CloudEvent>;

/**
 * Orders by created_at, then id. The separator sorts below every character of an id and
 * ends the time, so comparing keys compares times first exactly as comparing them alone would.
 */
const positionOf = (createdAt: string, id: string) => `${createdAt}\u0000${id}`;
const keyOf = (event: CloudEvent) => positionOf(event.created_at, event.id);

/** The equality indexes an event is entered in, by name (`<filter>:<value>`). */
function indexNamesOf(event: CloudEvent): string[] {
  const names = [`type:${event.type}`, `category:${categoryOf(event.type)}`, `actor:${event.actor}`];
  const resource = event.data?.id;
  if (typeof resource === 'string') names.push(`resource:${resource}`);
  return names;
}

/** The equality indexes a filter narrows to; the walk takes the smallest. */
function indexNamesFor(filter: AuditFilter): string[] {
  const names: string[] = [];
  if (filter.type) names.push(filter.type.endsWith('.*') ? `category:${filter.type.slice(0, -2)}` : `type:${filter.type}`);
  if (filter.resource_id) names.push(`resource:${filter.resource_id}`);
  if (filter.actor) names.push(`actor:${filter.actor}`);
  return names;
}

function matches(event: CloudEvent, filter: AuditFilter, q: string | undefined): boolean {
  const type = filter.type;
  if (type && (type.endsWith('.*') ? categoryOf(event.type) !== type.slice(0, -2) : event.type !== type)) return false;
  if (filter.resource_id && event.data?.id !== filter.resource_id) return false;
  if (filter.actor && event.actor !== filter.actor) return false;
  // The text is made when asked for rather than kept: a copy of every event as text would
  // double the log's memory for a filter few searches use.
  return !q || JSON.stringify(event).toLowerCase().includes(q);
}

class TeamEvents {
  readonly all: EventIndex = new BTree();
  private readonly byValue = new Map<string, EventIndex>();

  add(event: CloudEvent): void {
    const key = keyOf(event);
    this.all.set(key, event);
    for (const name of indexNamesOf(event)) {
      let index = this.byValue.get(name);
      if (!index) this.byValue.set(name, (index = new BTree()));
      index.set(key, event);
    }
  }

  remove(event: CloudEvent): void {
    const key = keyOf(event);
    this.all.delete(key);
    for (const name of indexNamesOf(event)) {
      const index = this.byValue.get(name);
      index?.delete(key);
      if (index?.size === 0) this.byValue.delete(name);
    }
  }

  /** The smallest index holding every event the filter can match (an empty one if a value has none). */
  narrowest(filter: AuditFilter): EventIndex {
    let best = this.all;
    for (const name of indexNamesFor(filter)) {
      const index = this.byValue.get(name);
      if (!index) return new BTree();
      if (index.size < best.size) best = index;
    }
    return best;
  }
}

export class AuditLog {
  private readonly byTeam = new Map<string, TeamEvents>();
  /** Ids of the events held, so an event the bus delivers twice is recorded once. */
  private readonly held = new Set<string>();
  private stopFollowing: (() => void) | null = null;
  private trimTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly retentionMs: number,
  ) {}

  start(): void {
    this.stopFollowing = this.bus.follow(new Date(Date.now() - this.retentionMs).toISOString(), (event) => this.record(event));
    // Hourly, or a tenth of a retention shorter than 10 hours (tests use seconds).
    this.trimTimer = setInterval(() => this.trim(), Math.min(Math.max(this.retentionMs / 10, 100), 3_600_000));
    this.trimTimer.unref();
  }

  stop(): void {
    this.stopFollowing?.();
    if (this.trimTimer) clearInterval(this.trimTimer);
  }

  /** Every event of a team matching every given filter, oldest first. */
  search(team: string, filter: AuditFilter): CloudEvent[] {
    return this.page(team, filter, { order: 'asc' }).events;
  }

  /** Up to `limit` events of a team matching every given filter, after `after`, and whether more follow. */
  page(team: string, filter: AuditFilter, request: AuditPageRequest): { events: CloudEvent[]; more: boolean } {
    const events: CloudEvent[] = [];
    const teamEvents = this.byTeam.get(team);
    if (!teamEvents) return { events, more: false };
    const limit = request.limit ?? Infinity;
    const q = filter.q?.toLowerCase();
    for (const event of this.walk(teamEvents.narrowest(filter), filter, request)) {
      if (!matches(event, filter, q)) continue;
      if (events.length === limit) return { events, more: true };
      events.push(event);
    }
    return { events, more: false };
  }

  /** The events of `index` inside the filter's time window, in the page's order, from just after `after`. */
  private *walk(index: EventIndex, filter: AuditFilter, request: AuditPageRequest): Generator<CloudEvent> {
    const after = request.after && positionOf(request.after.created_at, request.after.id);
    if (request.order === 'asc') {
      // A bare time sorts before every key of that time: the walk starts at its first event.
      const since = filter.since ?? '';
      const start = after !== undefined && after > since ? after : since;
      for (const [key, event] of index.entries(start)) {
        if (key === after) continue;
        if (filter.until && event.created_at >= filter.until) return;
        yield event;
      }
    } else {
      // Keys of the window's end time itself sort above the bare time, so they are left out.
      const until = filter.until;
      const start = after !== undefined && (until === undefined || after < until) ? after : until;
      for (const [, event] of index.entriesReversed(start, undefined, after !== undefined && start === after)) {
        if (filter.since && event.created_at < filter.since) return;
        yield event;
      }
    }
  }

  private record(event: CloudEvent): void {
    if (this.held.has(event.id)) return;
    this.held.add(event.id);
    let teamEvents = this.byTeam.get(event.team_id);
    if (!teamEvents) this.byTeam.set(event.team_id, (teamEvents = new TeamEvents()));
    teamEvents.add(event);
  }

  private trim(): void {
    const cutoff = new Date(Date.now() - this.retentionMs).toISOString();
    for (const [team, teamEvents] of this.byTeam) {
      const expired: CloudEvent[] = [];
      for (const [, event] of teamEvents.all.entries()) {
        if (event.created_at >= cutoff) break;
        expired.push(event);
      }
      for (const event of expired) {
        teamEvents.remove(event);
        this.held.delete(event.id);
      }
      if (teamEvents.all.size === 0) this.byTeam.delete(team);
    }
  }
}

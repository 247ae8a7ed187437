/**
 * The audit log: a searchable view of the event stream, per team. It follows the bus
 * from the start of the retention period, so it is rebuilt from the stream on every
 * start and needs no store of its own; the stream (the embedded log, or JetStream with
 * its max age) is the record.
 *
 * Each team's events are kept in ordered indexes of their keys (time, then id): one of all
 * of them, and one per value of each equality filter (type, category, resource, actor). A
 * page walks the most selective index that applies from the cursor (or the window's edge)
 * and checks the other filters on the way, so its cost follows the page and the filters'
 * selectivity, not the size of the team's history.
 *
 * The events' JSON texts are kept outside the heap (text-arena.ts), and only a page's
 * events, or those a text search reads, are read back and parsed. Parsed, an event with
 * the copy of its resource in `data` is some 30 objects for every collection to mark, for
 * the whole retention; most of the heap of a large installation was this history.
 */
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import { categoryOf, parseEvent } from '../events/types';
import { OrderedKeys, SortedKeys, SortedMap } from '../lib/sorted-keys';
import { ArenaSpill, TextArena } from '../lib/text-arena';
import { known } from '../lib/known';
import { fieldOf } from '../lib/unknown-values';

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
  /** Where the previous page stopped; the page starts strictly after it. */
  after?: AuditPosition;
  /** Without one, every match (the agent reads whole histories of one resource or window). */
  limit?: number;
  /**
   * How many events the page may look at: a search that matches rarely (a text, or
   * filters that together match few) then answers a short page, even an empty one, and a
   * position to go on from, rather than holding the event loop for a whole history.
   */
  scanLimit?: number;
}

/** Where a page stopped: the position of the last event it returned, or of the last it looked at. */
export interface AuditPosition {
  created_at: string;
  id: string;
}

export interface AuditPage {
  events: CloudEvent[];
  /** Null when the walk reached the end of what matches. */
  next: AuditPosition | null;
}

/**
 * Orders by created_at, then id. The separator sorts below every character of an id and
 * ends the time, so comparing keys compares times first exactly as comparing them alone would.
 */
const positionOf = (createdAt: string, id: string) => `${createdAt}\u0000${id}`;
const keyOf = (event: CloudEvent) => positionOf(event.created_at, event.id);
const positionAt = (key: string): AuditPosition => {
  const separator = key.indexOf('\u0000');
  return { created_at: key.slice(0, separator), id: key.slice(separator + 1) };
};

/** The equality indexes an event is entered in, by name (`<filter>:<value>`). */
function indexNamesOf(event: CloudEvent): string[] {
  const names = [`type:${event.type}`, `category:${categoryOf(event.type)}`, `actor:${event.actor}`];
  const resource = fieldOf(event.data, 'id');
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

class TeamEvents {
  /** Every event, by key, to the place of its text in the arena. */
  readonly all = new SortedMap<number>();
  private readonly byValue = new Map<string, SortedKeys>();

  constructor(private readonly arena: TextArena) {}

  /** Records an event once: one the bus delivers again has the same key (its time and id). */
  add(event: CloudEvent, text: string): void {
    const key = keyOf(event);
    if (this.all.has(key)) return;
    this.all.set(key, this.arena.add(text));
    for (const name of indexNamesOf(event)) {
      let index = this.byValue.get(name);
      if (!index) this.byValue.set(name, (index = new SortedKeys()));
      index.add(key);
    }
  }

  textOf(key: string): string {
    return this.arena.text(known(this.all.get(key), 'an indexed audit record'));
  }

  /** Whether the event at `key`, met in the walk of index `walked`, is of every other value the filter asks for. */
  matches(key: string, filter: AuditFilter, q: string | undefined, walked: string | null): boolean {
    for (const name of indexNamesFor(filter)) if (name !== walked && !this.byValue.get(name)?.has(key)) return false;
    return !q || this.textOf(key).toLowerCase().includes(q);
  }

  /** Forgets the events created before `cutoff` (a time). */
  expire(cutoff: string): void {
    let expired = 0;
    this.all.deleteBelow(cutoff, (_key, handle) => {
      this.arena.release(handle);
      expired++;
    });
    if (expired === 0) return;
    for (const [name, index] of this.byValue) {
      index.deleteBelow(cutoff);
      if (index.size === 0) this.byValue.delete(name);
    }
  }

  /** The smallest index holding every event the filter can match (an empty one if a value has none), and its name (null: all). */
  narrowest(filter: AuditFilter): { index: OrderedKeys; name: string | null } {
    let best: { index: OrderedKeys; name: string | null } = { index: this.all, name: null };
    for (const name of indexNamesFor(filter)) {
      const index = this.byValue.get(name);
      if (!index) return { index: new SortedKeys(), name };
      if (index.size < best.index.size) best = { index, name };
    }
    return best;
  }
}

export class AuditLog {
  private readonly byTeam = new Map<string, TeamEvents>();
  private readonly arena: TextArena;
  private stopFollowing: (() => void) | null = null;
  private trimTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly retentionMs: number,
    /** Where the texts of events go once a slab of them is full: a scratch file, else memory. */
    spill?: ArenaSpill,
  ) {
    this.arena = new TextArena(spill);
  }

  start(): void {
    this.stopFollowing = this.bus.follow(new Date(Date.now() - this.retentionMs).toISOString(), (event, text) => {
      this.record(event, text);
    });
    // Hourly, or a tenth of a retention shorter than 10 hours (tests use seconds).
    this.trimTimer = setInterval(
      () => {
        this.trim();
      },
      Math.min(Math.max(this.retentionMs / 10, 100), 3_600_000),
    );
    this.trimTimer.unref();
  }

  stop(): void {
    this.stopFollowing?.();
    if (this.trimTimer) clearInterval(this.trimTimer);
    this.arena.close();
  }

  /** Every event of a team matching every given filter, oldest first. */
  search(team: string, filter: AuditFilter): CloudEvent[] {
    return this.page(team, filter, { order: 'asc' }).events;
  }

  /**
   * Up to `count` of the newest events of a team matching the filter and `wanted`, newest
   * first, from no more than `scanLimit` events looked at.
   */
  newest(team: string, filter: AuditFilter, count: number, wanted: (event: CloudEvent) => boolean, scanLimit: number): CloudEvent[] {
    const found: CloudEvent[] = [];
    let after: AuditPosition | undefined;
    let scanned = 0;
    while (found.length < count && scanned < scanLimit) {
      const limit = Math.min(count, scanLimit - scanned);
      const { events, next } = this.page(team, filter, { order: 'desc', after, limit });
      scanned += events.length;
      for (const event of events) if (found.length < count && wanted(event)) found.push(event);
      if (!next) break;
      after = next;
    }
    return found;
  }

  /** Up to `limit` events of a team matching every given filter, after `after`, and where the next page starts. */
  page(team: string, filter: AuditFilter, request: AuditPageRequest): AuditPage {
    const events: CloudEvent[] = [];
    const teamEvents = this.byTeam.get(team);
    if (!teamEvents) return { events, next: null };
    const limit = request.limit ?? Infinity;
    const scanLimit = request.scanLimit ?? Infinity;
    const q = filter.q?.toLowerCase();
    const narrowest = teamEvents.narrowest(filter);
    let scanned = 0;
    let lastScanned = '';
    let lastReturned = '';
    for (const key of this.walk(narrowest.index, filter, request)) {
      // Another event is there to look at: the page says where to go on from.
      if (scanned === scanLimit) return { events, next: positionAt(lastScanned) };
      scanned++;
      lastScanned = key;
      if (!teamEvents.matches(key, filter, q, narrowest.name)) continue;
      if (events.length === limit) return { events, next: positionAt(lastReturned) };
      events.push(parseEvent(teamEvents.textOf(key)));
      lastReturned = key;
    }
    return { events, next: null };
  }

  /**
   * The keys of `index` inside the filter's time window, in the page's order, from just
   * after `after`. A key compares with a bare time as its own time does (positionOf).
   */
  private *walk(index: OrderedKeys, filter: AuditFilter, request: AuditPageRequest): Generator<string> {
    const after = request.after && positionOf(request.after.created_at, request.after.id);
    if (request.order === 'asc') {
      // A bare time sorts before every key of that time: the walk starts at its first event.
      const since = filter.since ?? '';
      const start = after !== undefined && after > since ? after : since;
      for (const key of index.ascending(start)) {
        if (key === after) continue;
        if (filter.until && key >= filter.until) return;
        yield key;
      }
    } else {
      // Below the start: past the cursor, or before the window's end time (whose own keys sort above the bare time).
      const until = filter.until;
      const start = after !== undefined && (until === undefined || after < until) ? after : until;
      for (const key of index.descending(start)) {
        if (filter.since && key < filter.since) return;
        yield key;
      }
    }
  }

  private record(event: CloudEvent, text: string): void {
    let teamEvents = this.byTeam.get(event.team_id);
    if (!teamEvents) this.byTeam.set(event.team_id, (teamEvents = new TeamEvents(this.arena)));
    teamEvents.add(event, text);
  }

  private trim(): void {
    const cutoff = new Date(Date.now() - this.retentionMs).toISOString();
    for (const [team, teamEvents] of this.byTeam) {
      teamEvents.expire(cutoff);
      if (teamEvents.all.size === 0) this.byTeam.delete(team);
    }
  }
}

/**
 * The audit log: a searchable view of the event stream, per team. It follows the bus
 * from the start of the retention period, so it is rebuilt from the stream on every
 * start and needs no store of its own; the stream (the embedded log, or JetStream with
 * its max age) is the record. Searches are scans of one team's events, newest first.
 */
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

export class AuditLog {
  private readonly byTeam = new Map<string, CloudEvent[]>();
  private readonly searchText = new Map<string, string>();
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

  /** Events of a team matching every given filter, oldest first. */
  search(team: string, filter: AuditFilter): CloudEvent[] {
    const events = this.byTeam.get(team) ?? [];
    const type = filter.type;
    const wildcard = type?.endsWith('.*') ? type.slice(0, -2) : null;
    const q = filter.q?.toLowerCase();
    return events.filter(
      (e) =>
        (!type || (wildcard !== null ? categoryOf(e.type) === wildcard : e.type === type)) &&
        (!filter.resource_id || e.data?.id === filter.resource_id) &&
        (!filter.actor || e.actor === filter.actor) &&
        (!filter.since || e.created_at >= filter.since) &&
        (!filter.until || e.created_at < filter.until) &&
        (!q || this.searchText.get(e.id)!.includes(q)),
    );
  }

  private record(event: CloudEvent): void {
    if (this.searchText.has(event.id)) return;
    this.searchText.set(event.id, JSON.stringify(event).toLowerCase());
    const list = this.byTeam.get(event.team_id) ?? [];
    // Events arrive nearly in order; insert from the end to keep the list sorted by time.
    let i = list.length;
    while (i > 0 && list[i - 1].created_at > event.created_at) i--;
    list.splice(i, 0, event);
    this.byTeam.set(event.team_id, list);
  }

  private trim(): void {
    const cutoff = new Date(Date.now() - this.retentionMs).toISOString();
    for (const [team, list] of this.byTeam) {
      const keepFrom = list.findIndex((e) => e.created_at >= cutoff);
      const dropped = keepFrom === -1 ? list : list.slice(0, keepFrom);
      for (const e of dropped) this.searchText.delete(e.id);
      if (keepFrom === -1) this.byTeam.delete(team);
      else if (keepFrom > 0) this.byTeam.set(team, list.slice(keepFrom));
    }
  }
}

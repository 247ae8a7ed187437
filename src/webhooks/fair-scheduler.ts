/**
 * Which due delivery starts next, and how many may be under way at once. Attempts are
 * capped three ways (in the whole process, per team, per subscription), so a receiver
 * that never answers holds at most its subscription's share of sockets, a team with many
 * such subscriptions at most the team's, and no team can take the process's file
 * descriptors from the others.
 *
 * Deliveries above a cap wait here, in memory; the delivery records stay `pending` and
 * due in the store, which is what a restart resumes from. Teams take turns (round robin),
 * and within a team its subscriptions do, so thousands queued by one team or one
 * subscription do not hold back another's single delivery: each pick serves the team
 * that was served longest ago, then its subscription served longest ago.
 */
import type { WebhookInFlightLimits } from '../config';

export interface Started<T> {
  team: string;
  subscription: string;
  id: string;
  item: T;
}

interface Lane<T> {
  /** Waiting deliveries in arrival order: adding one and taking the first are O(1). */
  waiting: Map<string, T>;
  /** Skipped by the rotation until resumed (waiting for its rate limit). */
  paused: boolean;
}

export class FairScheduler<T> {
  /**
   * Teams with waiting deliveries, least recently served first, each with its
   * subscriptions in the same order. A Map keeps insertion order, so serving one is
   * deleting it and adding it again at the end.
   */
  private readonly teams = new Map<string, Map<string, Lane<T>>>();
  private readonly teamRunning = new Map<string, number>();
  private readonly laneRunning = new Map<string, number>();
  private running = 0;
  private waitingCount = 0;

  constructor(private readonly limits: WebhookInFlightLimits) {}

  get inFlight(): number {
    return this.running;
  }

  get waiting(): number {
    return this.waitingCount;
  }

  /** Queues a due delivery behind its subscription's others; one already waiting stays where it is. */
  add(team: string, subscription: string, id: string, item: T): void {
    const lanes = this.teams.get(team) ?? new Map<string, Lane<T>>();
    this.teams.set(team, lanes);
    const lane = lanes.get(subscription) ?? { waiting: new Map<string, T>(), paused: false };
    lanes.set(subscription, lane);
    if (lane.waiting.has(id)) return;
    lane.waiting.set(id, item);
    this.waitingCount++;
  }

  /**
   * The next delivery to start, now counted as under way, or undefined when every waiting
   * one is held by a cap or a paused subscription. `admit` is asked before a
   * subscription's first waiting delivery is taken (its rate limit); a subscription it
   * refuses is passed over this time.
   */
  next(admit: (team: string, subscription: string) => boolean = () => true): Started<T> | undefined {
    if (this.running >= this.limits.global) return undefined;
    for (const [team, lanes] of this.teams) {
      if ((this.teamRunning.get(team) ?? 0) >= this.limits.perTeam) continue;
      for (const [subscription, lane] of lanes) {
        if (lane.paused || (this.laneRunning.get(laneKey(team, subscription)) ?? 0) >= this.limits.perSubscription) continue;
        if (!admit(team, subscription)) continue;
        return this.take(team, lanes, subscription, lane);
      }
    }
    return undefined;
  }

  /** An attempt that `next` started has ended: its place is free. */
  finish(team: string, subscription: string): void {
    this.running--;
    decrement(this.teamRunning, team);
    decrement(this.laneRunning, laneKey(team, subscription));
  }

  /** A paused subscription is passed over until resumed; its deliveries keep their places. */
  pause(team: string, subscription: string): void {
    const lane = this.teams.get(team)?.get(subscription);
    if (lane) lane.paused = true;
  }

  resume(team: string, subscription: string): void {
    const lane = this.teams.get(team)?.get(subscription);
    if (lane) lane.paused = false;
  }

  /** Forgets every waiting delivery (a stopping dispatcher); those under way still finish. */
  clear(): void {
    this.teams.clear();
    this.waitingCount = 0;
  }

  private take(team: string, lanes: Map<string, Lane<T>>, subscription: string, lane: Lane<T>): Started<T> {
    const first = lane.waiting.entries().next();
    // A lane with nothing waiting leaves the rotation when its last item is taken.
    if (first.done) throw new Error(`subscription ${subscription} of team ${team} is in the rotation with nothing waiting`);
    const [id, item] = first.value;
    lane.waiting.delete(id);
    this.waitingCount--;
    // Served now: both go to the back of their rotation (or leave it with nothing waiting).
    lanes.delete(subscription);
    if (lane.waiting.size > 0) lanes.set(subscription, lane);
    this.teams.delete(team);
    if (lanes.size > 0) this.teams.set(team, lanes);
    this.running++;
    increment(this.teamRunning, team);
    increment(this.laneRunning, laneKey(team, subscription));
    return { team, subscription, id, item };
  }
}

const laneKey = (team: string, subscription: string) => `${team}/${subscription}`;

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 0) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/**
 * The per-key rate limit: a fixed one-minute window per API key (per client address
 * for requests without a valid key). Every answer carries X-RateLimit-Limit, -Remaining
 * and -Reset (Unix seconds when the window ends); over the limit, 429 with Retry-After.
 * With one process the count is the process's. With replicas (NATS JetStream) a key's
 * count is shared: each replica leases its places in batches from the shared records
 * (shared-request-counts.ts), so the limit holds across replicas. Client addresses stay
 * counted per process: requests without a valid key must not cost shared writes. While
 * the shared records cannot be reached, a window is counted per process again.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../lib/errors';
import type { SharedRecords } from '../../store/shared-records';
import { SharedRequestCounts } from './shared-request-counts';
import { known } from '../../lib/known';

const WINDOW_MS = 60_000;

interface Window {
  start: number;
  count: number;
  /** Places this process may use in the window: the limit, or what it leased of the shared count. */
  budget: number;
  /** Places of the shared count no replica had leased, as of this process's last lease. */
  unleased: number;
  /** The lease under way, which the key's other requests wait for rather than lease again. */
  leasing?: Promise<void>;
  /** The shared count could not be had: this window is counted by the process alone. */
  alone?: boolean;
}

/** Who a request is counted as: `shared` when the count may be shared (an API key or a session's user). */
export interface Client {
  id: string;
  shared: boolean;
}

export interface Taken {
  allowed: boolean;
  remaining: number;
  resetAt: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  /** `shared`: the count the replicas share, which a key's requests then take from (sharedCountsOf). */
  constructor(
    readonly limit: number,
    private readonly shared?: SharedRequestCounts,
    private readonly onSharedFailure?: (err: Error) => void,
  ) {}

  /**
   * Counts one request of `client`; returns the window's state after it, at once unless
   * places must be leased from the shared count first (a read of every request).
   */
  take(client: Client, now = Date.now()): Taken | Promise<Taken> {
    this.sweep(now);
    const start = now - (now % WINDOW_MS);
    const shared = this.shared !== undefined && client.shared;
    let window = this.windows.get(client.id);
    if (!window || window.start !== start) {
      window = { start, count: 0, budget: shared ? 0 : this.limit, unleased: 0 };
      this.windows.set(client.id, window);
    }
    return shared && !window.alone && window.count >= window.budget ? this.takeLeased(window, client.id) : this.count(window);
  }

  private async takeLeased(window: Window, client: string): Promise<Taken> {
    // The last check of the places left and the count of this request run with no await
    // between them, so requests waiting for one lease never take the same place.
    while (!window.alone && window.count >= window.budget) {
      if (!(await this.leaseMore(window, client))) break;
    }
    return this.count(window);
  }

  private count(window: Window): Taken {
    const allowed = window.count < window.budget;
    window.count++;
    const unused = Math.max(0, window.budget - window.count);
    return { allowed, remaining: Math.min(this.limit, unused + window.unleased), resetAt: window.start + WINDOW_MS };
  }

  /**
   * Leases more places, or waits for the key's lease under way: one at a time per key.
   * Answers false when the window has none left to lease.
   */
  private async leaseMore(window: Window, client: string): Promise<boolean> {
    window.leasing ??= this.lease(window, client).finally(() => {
      window.leasing = undefined;
    });
    await window.leasing;
    return window.count < window.budget || window.unleased > 0;
  }

  private async lease(window: Window, client: string): Promise<void> {
    try {
      const { granted, unleased } = await known(this.shared, 'the shared counter (leases are taken only with one)').lease(client, window.start);
      window.budget += granted;
      window.unleased = unleased;
    } catch (err) {
      // The shared records cannot be reached: this window is counted per
      // process, as without replicas, rather than refuse every request.
      this.onSharedFailure?.(err instanceof Error ? err : new Error(String(err)));
      window.alone = true;
      window.budget = this.limit;
      window.unleased = 0;
    }
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < WINDOW_MS) return;
    this.lastSweep = now;
    for (const [client, window] of this.windows) if (window.start + WINDOW_MS <= now) this.windows.delete(client);
  }
}

/** The count the replicas share, when there are replicas. */
export const sharedCountsOf = (shared: SharedRecords | undefined, limit: number) => (shared ? new SharedRequestCounts(shared, limit) : undefined);

/**
 * Counts the request against its key's (or client address's) limit and, for a caller of a
 * team, against the team's: `team` bounds what all of a team's keys send together.
 */
export function applyRateLimit(
  limiter: RateLimiter,
  request: FastifyRequest,
  reply: { header(name: string, value: string | number): unknown },
  team?: RateLimiter,
): void | Promise<void> {
  const { principal } = request;
  const client: Client = principal ? { id: `key:${principal.key}`, shared: true } : { id: `ip:${request.ip}`, shared: false };
  const now = Date.now();
  const own = limiter.take(client, now);
  const teamsOf = (taken: Taken): Taken | Promise<Taken> | undefined =>
    // A request its key may not send is not counted against its team.
    taken.allowed && principal && team ? team.take({ id: `team:${principal.team}`, shared: true }, now) : undefined;
  // Without a lease to wait for, all at once: no promise per request.
  if (own instanceof Promise)
    return own.then(async (taken) => {
      answer(limiter, reply, now, taken, await teamsOf(taken), team);
    });
  const teams = teamsOf(own);
  if (teams instanceof Promise)
    return teams.then((taken) => {
      answer(limiter, reply, now, own, taken, team);
    });
  answer(limiter, reply, now, own, teams, team);
}

/** The rate-limit headers, and the refusal of a request over either limit. */
function answer(
  limiter: RateLimiter,
  reply: { header(name: string, value: string | number): unknown },
  now: number,
  own: Taken,
  teams: Taken | undefined,
  team: RateLimiter | undefined,
): void {
  reply.header('X-RateLimit-Limit', limiter.limit);
  reply.header('X-RateLimit-Remaining', Math.min(own.remaining, teams?.remaining ?? own.remaining));
  reply.header('X-RateLimit-Reset', Math.ceil(own.resetAt / 1000));
  const refused = !own.allowed
    ? `More than ${limiter.limit} requests this minute`
    : team && teams && !teams.allowed
      ? `More than ${team.limit} requests this minute from the team's keys together`
      : null;
  if (refused) {
    const retryAfter = Math.max(1, Math.ceil((own.resetAt - now) / 1000));
    throw new ApiError(429, 'rate_limit_exceeded', `${refused}; retry in ${retryAfter} s.`, undefined, { 'Retry-After': String(retryAfter) });
  }
}

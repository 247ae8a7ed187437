/**
 * The per-key rate limit: a fixed one-minute window per API key (per client address
 * for requests without a valid key). Every answer carries X-RateLimit-Limit, -Remaining
 * and -Reset (Unix seconds when the window ends); over the limit, 429 with Retry-After.
 * Counts are per process: with several replicas each enforces the limit on its own share.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../lib/errors';

const WINDOW_MS = 60_000;

interface Window {
  start: number;
  count: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(readonly limit: number) {}

  /** Counts one request for `client`; returns the window's state after it. */
  take(client: string, now = Date.now()): { allowed: boolean; remaining: number; resetAt: number } {
    this.sweep(now);
    const start = now - (now % WINDOW_MS);
    let window = this.windows.get(client);
    if (!window || window.start !== start) {
      window = { start, count: 0 };
      this.windows.set(client, window);
    }
    window.count++;
    return { allowed: window.count <= this.limit, remaining: Math.max(0, this.limit - window.count), resetAt: start + WINDOW_MS };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < WINDOW_MS) return;
    this.lastSweep = now;
    for (const [client, window] of this.windows) if (window.start + WINDOW_MS <= now) this.windows.delete(client);
  }
}

export function applyRateLimit(limiter: RateLimiter, request: FastifyRequest, reply: { header(name: string, value: string | number): unknown }): void {
  const client = request.principal ? `key:${request.principal.key}` : `ip:${request.ip}`;
  const now = Date.now();
  const { allowed, remaining, resetAt } = limiter.take(client, now);
  reply.header('X-RateLimit-Limit', limiter.limit);
  reply.header('X-RateLimit-Remaining', remaining);
  reply.header('X-RateLimit-Reset', Math.ceil(resetAt / 1000));
  if (!allowed) {
    const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
    throw new ApiError(429, 'rate_limit_exceeded', `More than ${limiter.limit} requests this minute; retry in ${retryAfter} s.`, undefined, {
      'Retry-After': String(retryAfter),
    });
  }
}

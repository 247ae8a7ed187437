import { nextAttemptAt, retryAfterMs } from '../../src/webhooks/schedule';
import { MAX_ATTEMPTS } from '../../src/resources/webhook';
import { subscriptionMatches } from '../../src/webhooks/matching';
import type { CloudEvent } from '../../src/resources/cloud-event';

describe('retry schedule', () => {
  it('retries after 1, 5, 25, 125, 625 s, then every 600 s, at most 15 attempts', () => {
    const first = 0;
    let last = first;
    const gaps: number[] = [];
    for (let attempt = 1; ; attempt++) {
      const next = nextAttemptAt(attempt, first, last, 1);
      if (next === null) {
        expect(attempt).toBe(MAX_ATTEMPTS);
        break;
      }
      gaps.push((next - last) / 1000);
      last = next;
    }
    expect(gaps).toEqual([1, 5, 25, 125, 625, 600, 600, 600, 600, 600, 600, 600, 600, 600]);
  });

  it('stops 24 hours after the first attempt when that comes first', () => {
    const first = 0;
    expect(nextAttemptAt(6, first, 23.95 * 3600_000, 1)).toBeNull();
  });

  it("honours a receiver's Retry-After when it asks for more time", () => {
    expect(nextAttemptAt(1, 0, 0, 1, 30_000)).toBe(30_000);
    expect(nextAttemptAt(1, 0, 0, 1, 100)).toBe(1_000);
    expect(retryAfterMs('120', 0, 1)).toBe(120_000);
    expect(retryAfterMs(new Date(60_000).toUTCString(), 0, 1)).toBe(60_000);
    expect(retryAfterMs('soon', 0, 1)).toBeUndefined();
  });

  it('scales every interval for tests', () => {
    expect(nextAttemptAt(2, 0, 0, 0.001)).toBe(5);
  });
});

describe('subscription matching', () => {
  const event = (type: string, data: Record<string, unknown>): CloudEvent => ({ id: 'evt_x', type, created_at: '', team_id: 't', actor: 'system', data });

  it('matches exact types and category wildcards', () => {
    const sub = { events: ['server.*', 'job.failed'], filter: null };
    expect(subscriptionMatches(sub, event('server.running', {}))).toBe(true);
    expect(subscriptionMatches(sub, event('job.failed', {}))).toBe(true);
    expect(subscriptionMatches(sub, event('job.completed', {}))).toBe(false);
    expect(subscriptionMatches(sub, event('serverx.running', {}))).toBe(false);
  });

  it('applies filter keys only to their category; all that apply must match', () => {
    const sub = { events: ['server.*', 'job.*'], filter: { 'server.region': ['fra1', 'ams3'], 'server.plan': 's-1vcpu-1gb' } };
    expect(subscriptionMatches(sub, event('server.running', { region: 'fra1', plan: 's-1vcpu-1gb' }))).toBe(true);
    expect(subscriptionMatches(sub, event('server.running', { region: 'nyc1', plan: 's-1vcpu-1gb' }))).toBe(false);
    expect(subscriptionMatches(sub, event('server.running', { region: 'ams3', plan: 'big' }))).toBe(false);
    expect(subscriptionMatches(sub, event('server.running', { plan: 's-1vcpu-1gb' }))).toBe(false);
    expect(subscriptionMatches(sub, event('job.completed', { region: 'nyc1' }))).toBe(true);
  });
});

/**
 * How events become usage intervals (src/usage/metering.ts), and how thresholds are judged
 * (src/usage/thresholds.ts): the rules docs/api.md's Usage section states, case by case.
 */
import type { CloudEvent } from '../../src/resources/cloud-event';
import { applyEvent, hoursWithin, Interval, meteredSubject } from '../../src/usage/metering';
import { crossings, periodOf } from '../../src/usage/thresholds';
import { countsFromRecord, countsToRecord, intervalFromRecord, intervalToRecord } from '../../src/usage/records';

const event = (type: string, at: string, data: Record<string, unknown>): CloudEvent => ({
  id: `evt_${Math.random().toString(36).slice(2, 18)}`,
  type,
  created_at: at,
  team_id: 'team_x',
  actor: 'system',
  data: { id: 'svr_1', ...data },
});

/** Applies events in order, as the recorder does, keeping what the last change left. */
function replay(events: CloudEvent[]): Interval | undefined {
  let interval: Interval | undefined;
  for (const e of events) {
    const subject = meteredSubject(e)!;
    interval = applyEvent(interval, subject.metered, subject.id, e) ?? interval;
  }
  return interval;
}

describe('usage intervals from events', () => {
  it('counts a server from running to deleted, through stopped, split by plan', () => {
    const interval = replay([
      event('server.created', '2026-11-01T00:00:00Z', { status: 'creating', plan: 's-1vcpu-1gb' }),
      event('server.running', '2026-11-01T01:00:00Z', { status: 'running', plan: 's-1vcpu-1gb' }),
      event('server.stopped', '2026-11-01T02:00:00Z', { status: 'stopped', plan: 's-1vcpu-1gb' }),
      event('server.updated', '2026-11-01T03:00:00Z', { status: 'stopped', plan: 's-2vcpu-4gb' }),
      event('server.running', '2026-11-01T04:00:00Z', { status: 'running', plan: 's-2vcpu-4gb' }),
      event('server.deleted', '2026-11-01T05:00:00Z', { status: 'deleted', plan: 's-2vcpu-4gb' }),
    ]);
    expect(interval).toEqual({
      family: 'server',
      resource_id: 'svr_1',
      ended: true,
      segments: [
        { plan: 's-1vcpu-1gb', from: '2026-11-01T01:00:00Z', to: '2026-11-01T03:00:00Z' },
        { plan: 's-2vcpu-4gb', from: '2026-11-01T03:00:00Z', to: '2026-11-01T05:00:00Z' },
      ],
    });
  });

  it('changes nothing for a redelivered event, an event after the end, or a resource that never counted', () => {
    const running = event('server.running', '2026-11-01T01:00:00Z', { status: 'running', plan: 'p' });
    const subject = meteredSubject(running)!;
    const opened = applyEvent(undefined, subject.metered, subject.id, running)!;
    expect(applyEvent(opened, subject.metered, subject.id, running)).toBeUndefined();
    const deleted = applyEvent(opened, subject.metered, subject.id, event('server.deleted', '2026-11-01T02:00:00Z', { status: 'deleted', plan: 'p' }))!;
    expect(applyEvent(deleted, subject.metered, subject.id, running)).toBeUndefined();
    const failed = event('server.failed', '2026-11-01T00:30:00Z', { status: 'failed', plan: 'p' });
    expect(applyEvent(undefined, subject.metered, subject.id, failed)).toBeUndefined();
    expect(applyEvent(undefined, subject.metered, subject.id, event('server.deleted', '2026-11-01T00:40:00Z', { status: 'deleted' }))).toBeUndefined();
  });

  it('meters only families with a plan or size, by the plan each reports', () => {
    expect(meteredSubject(event('api_key.created', '2026-11-01T00:00:00Z', { status: 'active' }))).toBeNull();
    expect(meteredSubject(event('webhook.created', '2026-11-01T00:00:00Z', { status: 'active' }))).toBeNull();
    const share = meteredSubject(event('file_share.available', '2026-11-01T00:00:00Z', { status: 'available', size_gb: 250 }))!;
    expect(share.metered.planOf({ size_gb: 250 })).toBe('250gb');
    const vpn = meteredSubject(event('vpn_gateway.active', '2026-11-01T00:00:00Z', { status: 'active', tunnel_type: 'wireguard' }))!;
    expect(vpn.metered.planOf({ tunnel_type: 'wireguard' })).toBe('wireguard');
    const job = meteredSubject(event('job.running', '2026-11-01T00:00:00Z', { status: 'running', plan: 'standard' }))!;
    expect(job.metered.counting).toEqual(['running']);
  });

  it('clips a segment to the window, an open one at now', () => {
    const at = (iso: string) => Date.parse(iso);
    const closed = { plan: 'p', from: '2026-11-01T01:00:00Z', to: '2026-11-01T05:00:00Z' };
    expect(hoursWithin(closed, at('2026-11-01T00:00:00Z'), at('2026-11-02T00:00:00Z'), at('2026-11-03T00:00:00Z'))).toBe(4);
    expect(hoursWithin(closed, at('2026-11-01T02:00:00Z'), at('2026-11-01T03:30:00Z'), at('2026-11-03T00:00:00Z'))).toBe(1.5);
    expect(hoursWithin(closed, at('2026-11-01T06:00:00Z'), at('2026-11-01T07:00:00Z'), at('2026-11-03T00:00:00Z'))).toBe(0);
    const open = { plan: 'p', from: '2026-11-01T01:00:00Z', to: null };
    expect(hoursWithin(open, at('2026-11-01T00:00:00Z'), at('2026-12-01T00:00:00Z'), at('2026-11-01T03:00:00Z'))).toBe(2);
  });
});

describe('usage thresholds', () => {
  it('reaches a soft threshold at it, passes a hard limit only above it', () => {
    const limits = { api_requests: { soft: 10, hard: 20 }, server_hours: { soft: null, hard: 1 } };
    expect(crossings(limits, { api_requests: 9 })).toEqual([]);
    expect(crossings(limits, { api_requests: 10 }).map((c) => c.type)).toEqual(['usage.threshold_reached']);
    expect(crossings(limits, { api_requests: 20 }).map((c) => c.type)).toEqual(['usage.threshold_reached']);
    expect(crossings(limits, { api_requests: 21, server_hours: 1.5 }).map((c) => `${c.type} ${c.metric}`)).toEqual([
      'usage.threshold_reached api_requests',
      'usage.overage api_requests',
      'usage.overage server_hours',
    ]);
  });

  it('judges over the calendar month in UTC', () => {
    const period = periodOf(new Date('2026-12-31T23:59:59Z'));
    expect([period.name, period.start.toISOString(), period.end.toISOString()]).toEqual(['2026-12', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
  });
});

describe('usage records as stored', () => {
  it('reads back what it wrote, and a record whose JSON was spoilt (edited by hand) as empty rather than failing every report', () => {
    const interval: Interval = {
      family: 'server',
      resource_id: 'svr_1',
      segments: [{ plan: 's-1', from: '2026-11-01T00:00:00.000Z', to: null }],
      ended: false,
    };
    expect(intervalFromRecord(intervalToRecord(interval))).toEqual(interval);
    expect(intervalFromRecord({ ...intervalToRecord(interval), segments: '{not json' }).segments).toEqual([]);
    expect(intervalFromRecord({ ...intervalToRecord(interval), segments: '[{"plan":1}]' }).segments).toEqual([]);
    const counts = { requests: { '00': 3 }, deliveries: {} };
    expect(countsFromRecord(countsToRecord('p1', '2026-11-29', counts))).toEqual(counts);
    expect(countsFromRecord({ requests: '{"00":"three"}', deliveries: 'null' })).toEqual({ requests: {}, deliveries: {} });
  });
});

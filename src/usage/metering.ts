/**
 * What is metered, and how a resource's lifecycle becomes usage intervals (docs/api.md, Usage).
 *
 * A resource counts from the first event that shows it provisioned (a state in `counting`)
 * until the first one that shows it gone or stopped counting (any other state); each
 * segment of an interval carries the plan the resource had, so a resize or a plan change
 * closes one segment and opens another. Pure functions: the recorder (interval-recorder.ts)
 * applies them to the durable record, the report clips the segments to a window.
 */
import type { CloudEvent } from '../resources/cloud-event';
import { categoryOf } from '../events/types';
import { fieldOf, scalarText } from '../lib/unknown-values';

export interface MeteredFamily {
  /** The family's name, its event category: `server`. */
  family: string;
  /** States in which the resource holds what the team pays for. */
  counting: readonly string[];
  /** The plan or size the hours are billed by, read from the event's data (the resource's record). */
  planOf(data: Record<string, unknown>): string;
}

const fixedPlan = () => 'standard';
const field = (name: string) => (data: Record<string, unknown>) => scalarText(data[name]) ?? 'standard';

/**
 * Every family with a plan or size. A stopped server still counts: its plan's capacity
 * stays reserved for it (as at DigitalOcean and Hetzner); a job counts while it runs.
 */
export const METERED_FAMILIES: readonly MeteredFamily[] = [
  { family: 'load_balancer', counting: ['running'], planOf: fixedPlan },
  { family: 'vpn_gateway', counting: ['active'], planOf: field('tunnel_type') },
  { family: 'server', counting: ['running', 'stopping', 'stopped', 'starting', 'rebooting'], planOf: field('plan') },
  { family: 'bucket', counting: ['available'], planOf: fixedPlan },
  { family: 'file_share', counting: ['available'], planOf: (data) => `${scalarText(data.size_gb) ?? ''}gb` },
  { family: 'job', counting: ['running'], planOf: field('plan') },
];

/** States after which a resource never counts again. */
const FINAL_STATES = ['deleted', 'destroyed'];

export const meteredFamily = (family: string) => METERED_FAMILIES.find((m) => m.family === family);

/** Metrics limits may name: one per metered family, all resource-hours, requests, deliveries. */
export const hoursMetric = (family: string) => `${family}_hours`;
export const RESOURCE_HOURS = 'resource_hours';
export const API_REQUESTS = 'api_requests';
export const WEBHOOK_DELIVERIES = 'webhook_deliveries';
export const METRICS: readonly string[] = [API_REQUESTS, WEBHOOK_DELIVERIES, RESOURCE_HOURS, ...METERED_FAMILIES.map((m) => hoursMetric(m.family))];
export const unitOf = (metric: string) => (metric === API_REQUESTS ? 'requests' : metric === WEBHOOK_DELIVERIES ? 'deliveries' : 'hours');

export interface Segment {
  plan: string;
  from: string;
  /** Null while open: it counts up to the end of the window, or now. */
  to: string | null;
}

export interface Interval {
  family: string;
  resource_id: string;
  segments: Segment[];
  /** Deleted or destroyed: later events (a redelivery, a late status write) open nothing. */
  ended: boolean;
}

/** The family and resource an event is about, when it is metered. */
export function meteredSubject(event: CloudEvent): { metered: MeteredFamily; id: string } | null {
  const metered = meteredFamily(categoryOf(event.type));
  // An event from the bus was written by another process: its data may be missing.
  const id = fieldOf(event.data, 'id');
  if (!metered || typeof id !== 'string' || typeof event.data.status !== 'string') return null;
  return { metered, id };
}

/**
 * The interval after an event; `undefined` when the event changes nothing (so a
 * redelivered event writes nothing). Events reach the recorder in order.
 */
export function applyEvent(current: Interval | undefined, metered: MeteredFamily, id: string, event: CloudEvent): Interval | undefined {
  const interval: Interval = current ?? { family: metered.family, resource_id: id, segments: [], ended: false };
  if (interval.ended) return undefined;
  // meteredSubject admits string states only; anything else is no state ('').
  const state = typeof event.data.status === 'string' ? event.data.status : '';
  const at = event.created_at;
  const open = interval.segments.find((s) => s.to === null);
  const segments = interval.segments.map((s) => ({ ...s }));
  const close = () => {
    const last = segments.find((s) => s.to === null);
    // A late event stamped before the segment began closes it where it began: never a negative span.
    if (last) last.to = at > last.from ? at : last.from;
  };
  if (metered.counting.includes(state)) {
    const plan = metered.planOf(event.data);
    if (open?.plan === plan) return undefined;
    close();
    segments.push({ plan, from: at, to: null });
  } else {
    const ended = FINAL_STATES.includes(state);
    if (!open && (!ended || !current)) return undefined;
    close();
    if (ended) return { ...interval, segments, ended: true };
  }
  return { ...interval, segments };
}

/** Hours of a segment inside [since, until), open segments counting up to `now`. */
export function hoursWithin(segment: Segment, since: number, until: number, now: number): number {
  const start = Math.max(Date.parse(segment.from), since);
  const end = Math.min(segment.to === null ? now : Date.parse(segment.to), until, now);
  return end > start ? (end - start) / 3_600_000 : 0;
}

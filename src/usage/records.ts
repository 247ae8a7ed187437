/**
 * The durable usage records, kept as store records (Store.records: create-if-absent and
 * compare-and-swap on both backends; in Kubernetes ConfigMaps in the team's namespace).
 * Usage retention (retention.ts) removes them, which is why they share one prefix,
 * USAGE_RECORD_PREFIX.
 * - `usage-meter-<day>-<time>`: the intervals (metering.ts) of the team's metered
 *   resources created in one ten-second window (UTC); written by the recorder only, with
 *   a swap, once per batch of events however many resources it holds. A burst of creates
 *   thus costs a write or two, not one per resource; the window bounds a record's size (a
 *   ConfigMap holds 1 MiB: about 7,000 creates in ten seconds by one team), and a team
 *   never has more of them than resources.
 * - `usage-interval-<resource id>`: one resource's segments, as versions before the meter
 *   records kept them; the recorder goes on writing a resource's here while it has one.
 * - `usage-counts-<process>-<day>`: one service process's request and delivery counts of
 *   one UTC day, per hour. Each process writes only its own (so replicas never contend)
 *   and the report sums them all.
 * - `usage-limits`: the team's thresholds (PUT /api/v1/usage/limits).
 * - `usage-notices-<period>`: which thresholds already emitted their event this period.
 */
import type { Store } from '../store/types';
import type { RecordKind } from '../store/record-kinds';
import { sameJson } from '../lib/canonical-json';
import { Static, TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Interval } from './metering';

export const USAGE_RECORD_PREFIX = 'usage-';
export const INTERVAL_PREFIX = `${USAGE_RECORD_PREFIX}interval-`;
export const COUNTS_PREFIX = `${USAGE_RECORD_PREFIX}counts-`;
export const LIMITS_NAME = `${USAGE_RECORD_PREFIX}limits`;
export const NOTICES_PREFIX = `${USAGE_RECORD_PREFIX}notices-`;
export const USAGE_RECORDS: RecordKind = {
  prefix: USAGE_RECORD_PREFIX,
  sealed: false,
  keptBy: 'usage/retention.ts removes records past CLOUDPLANE_USAGE_RETENTION_DAYS',
};

export const METER_PREFIX = `${USAGE_RECORD_PREFIX}meter-`;
export const intervalName = (resourceId: string) => `${INTERVAL_PREFIX}${resourceId}`;

/**
 * The meter record of a resource, from its creation time, which every event of it carries:
 * `usage-meter-20261130-094710` for one created at 09:47:13 UTC.
 */
export function meterName(createdAt: string): string {
  const parts = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d)/.exec(createdAt);
  return `${METER_PREFIX}${parts ? `${parts[1]}${parts[2]}${parts[3]}-${parts[4]}${parts[5]}${parts[6]}0` : 'undated'}`;
}

/** What a record's JSON fields hold, checked as they are read (a record edited by hand reads as empty). */
const Segments = Type.Array(Type.Object({ plan: Type.String(), from: Type.String(), to: Type.Union([Type.String(), Type.Null()]) }));
const Counts = Type.Record(Type.String(), Type.Number());
const parsed = <T extends TSchema>(schema: T, text: string | undefined, empty: () => Static<T>): Static<T> => {
  try {
    const value: unknown = JSON.parse(text ?? '');
    return Value.Check(schema, value) ? value : empty();
  } catch {
    return empty();
  }
};

export function intervalFromRecord(data: Record<string, string>): Interval {
  return { family: data.family, resource_id: data.resource_id, segments: parsed(Segments, data.segments, () => []), ended: data.ended === 'true' };
}

export function intervalToRecord(interval: Interval): Record<string, string> {
  return { family: interval.family, resource_id: interval.resource_id, segments: JSON.stringify(interval.segments), ended: String(interval.ended) };
}

const Intervals = Type.Record(Type.String(), Type.Object({ family: Type.String(), segments: Segments, ended: Type.Boolean() }));

/** The intervals of a meter record, by resource id (a record edited by hand reads as empty). */
export function metersFromRecord(data: Record<string, string>): Map<string, Interval> {
  const intervals = parsed(Intervals, data.intervals, () => ({}));
  return new Map(Object.entries(intervals).map(([id, { family, segments, ended }]) => [id, { family, resource_id: id, segments, ended }]));
}

export function metersToRecord(intervals: Map<string, Interval>): Record<string, string> {
  const byId = Object.fromEntries([...intervals].map(([id, { family, segments, ended }]) => [id, { family, segments, ended }]));
  return { intervals: JSON.stringify(byId) };
}

/** Every interval a usage record holds: one (a resource's own record) or many (a meter record). */
export function intervalsOfRecord(name: string, data: Record<string, string>): Interval[] {
  if (name.startsWith(METER_PREFIX)) return [...metersFromRecord(data).values()];
  return name.startsWith(INTERVAL_PREFIX) ? [intervalFromRecord(data)] : [];
}

/** Counts of one process, one team and one day: hour (`2026-11-24T13`) -> count. */
export interface DayCounts {
  requests: Record<string, number>;
  deliveries: Record<string, number>;
}

export const countsName = (process: string, day: string) => `${COUNTS_PREFIX}${process}-${day}`;

export function countsFromRecord(data: Record<string, string>): DayCounts {
  return { requests: parsed(Counts, data.requests, () => ({})), deliveries: parsed(Counts, data.deliveries, () => ({})) };
}

export function countsToRecord(process: string, day: string, counts: DayCounts): Record<string, string> {
  return { process, day, requests: JSON.stringify(counts.requests), deliveries: JSON.stringify(counts.deliveries) };
}

/**
 * Reads, changes and writes one record until no other writer came in between; `change`
 * answers undefined to write nothing.
 */
export async function swapUntilDone(
  store: Store,
  team: string,
  name: string,
  change: (current: Record<string, string> | undefined) => Record<string, string> | undefined,
): Promise<void> {
  for (;;) {
    const current = await store.records.get(team, name);
    const next = change(current);
    if (next === undefined) return;
    if (current === undefined) {
      const stored = await store.records.add(team, name, next);
      if (sameJson(stored, next)) return;
    } else if (await store.records.swap(team, name, current, next)) {
      return;
    }
  }
}

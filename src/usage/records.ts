/**
 * The durable usage records, kept as store records (Store.records: create-if-absent and
 * compare-and-swap on both backends; in Kubernetes ConfigMaps in the team's namespace).
 * Usage retention (retention.ts) removes them, which is why they share one prefix,
 * USAGE_RECORD_PREFIX.
 * - `usage-interval-<resource id>`: a metered resource's segments (metering.ts); written
 *   by the recorder only, with a swap.
 * - `usage-counts-<process>-<day>`: one service process's request and delivery counts of
 *   one UTC day, per hour. Each process writes only its own (so replicas never contend)
 *   and the report sums them all.
 * - `usage-limits`: the team's thresholds (PUT /api/v1/usage/limits).
 * - `usage-notices-<period>`: which thresholds already emitted their event this period.
 */
import type { Store } from '../store/types';
import type { RecordKind } from '../store/record-kinds';
import { sameJson } from '../lib/canonical-json';
import { Static, Type } from '@sinclair/typebox';
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

export const intervalName = (resourceId: string) => `${INTERVAL_PREFIX}${resourceId}`;

/** What a record's JSON fields hold, checked as they are read (a record edited by hand reads as empty). */
const Segments = Type.Array(Type.Object({ plan: Type.String(), from: Type.String(), to: Type.Union([Type.String(), Type.Null()]) }));
const Counts = Type.Record(Type.String(), Type.Number());
const parsed = <T extends typeof Segments | typeof Counts>(schema: T, text: string | undefined, empty: () => Static<T>): Static<T> => {
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

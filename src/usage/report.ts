/**
 * A team's usage over a window (GET /api/v1/usage): resource-hours from the intervals
 * clipped to the window (open ones counting up to the window's end, or now), and the
 * request and delivery counts of every hour the window overlaps, summed over the records
 * of every process (this one's from memory, as it may not have flushed yet).
 */
import type { Store } from '../store/types';
import { API_REQUESTS, hoursMetric, hoursWithin, RESOURCE_HOURS, WEBHOOK_DELIVERIES } from './metering';
import { COUNTS_PREFIX, countsFromRecord, DayCounts, INTERVAL_PREFIX, intervalsOfRecord, METER_PREFIX } from './records';
import type { UsageCounters } from './counters';

const HOUR_MS = 3_600_000;

export interface ResourceUsage {
  family: string;
  plan: string;
  quantity: number;
  unit: 'hours';
  /** How many resources contributed. */
  resources: number;
}

export interface UsageReport {
  since: string;
  until: string;
  resources: ResourceUsage[];
  resource_hours: { quantity: number; unit: 'hours' };
  webhook_deliveries: { quantity: number; unit: 'deliveries' };
  api_requests: { quantity: number; unit: 'requests' };
}

/** Hours to the millisecond's worth: six decimals (3.6 ms). */
const roundHours = (hours: number) => Math.round(hours * 1e6) / 1e6;

export async function usageReport(store: Store, counters: UsageCounters, team: string, since: Date, until: Date, now = Date.now()): Promise<UsageReport> {
  const from = since.getTime();
  const to = until.getTime();
  const byPlan = new Map<string, { family: string; plan: string; hours: number; ids: Set<string> }>();
  const intervals = [...(await store.records.list(METER_PREFIX)), ...(await store.records.list(INTERVAL_PREFIX))]
    .filter((record) => record.team === team)
    .flatMap((record) => intervalsOfRecord(record.name, record.data));
  for (const interval of intervals) {
    for (const segment of interval.segments) {
      const hours = hoursWithin(segment, from, to, now);
      if (hours <= 0) continue;
      const key = `${interval.family}/${segment.plan}`;
      const row = byPlan.get(key) ?? { family: interval.family, plan: segment.plan, hours: 0, ids: new Set<string>() };
      row.hours += hours;
      row.ids.add(interval.resource_id);
      byPlan.set(key, row);
    }
  }
  const own = counters.own(team);
  const days: DayCounts[] = [...own.values()];
  for (const record of await store.records.list(COUNTS_PREFIX)) {
    const superseded = record.data.process === counters.process && own.has(record.data.day);
    if (record.team === team && !superseded) days.push(countsFromRecord(record.data));
  }
  const inWindow = (hour: string) => {
    const start = Date.parse(`${hour}:00:00Z`);
    return start < to && start + HOUR_MS > from;
  };
  const sum = (metric: keyof DayCounts) =>
    days.reduce((total, day) => total + Object.entries(day[metric]).reduce((n, [hour, count]) => n + (inWindow(hour) ? count : 0), 0), 0);
  const resources = [...byPlan.values()]
    .sort((a, b) => a.family.localeCompare(b.family) || a.plan.localeCompare(b.plan))
    .map((row): ResourceUsage => ({ family: row.family, plan: row.plan, quantity: roundHours(row.hours), unit: 'hours', resources: row.ids.size }));
  return {
    since: since.toISOString(),
    until: until.toISOString(),
    resources,
    resource_hours: { quantity: roundHours([...byPlan.values()].reduce((n, row) => n + row.hours, 0)), unit: 'hours' },
    webhook_deliveries: { quantity: sum('deliveries'), unit: 'deliveries' },
    api_requests: { quantity: sum('requests'), unit: 'requests' },
  };
}

/** The report's quantity of each metric a limit may name (metering.ts METRICS). */
export function metricQuantities(report: UsageReport): Record<string, number> {
  const quantities: Record<string, number> = {
    [API_REQUESTS]: report.api_requests.quantity,
    [WEBHOOK_DELIVERIES]: report.webhook_deliveries.quantity,
    [RESOURCE_HOURS]: report.resource_hours.quantity,
  };
  for (const row of report.resources) quantities[hoursMetric(row.family)] = roundHours((quantities[hoursMetric(row.family)] ?? 0) + row.quantity);
  return quantities;
}

/**
 * Team limits on usage (GET/PUT /api/v1/usage/limits) and the watch that turns them into
 * events. Per metric a team may set a soft threshold, which emits
 * `usage.threshold_reached` once the period's usage reaches it, and a hard limit, which
 * emits `usage.overage` once usage passes it. The period is the calendar month (UTC).
 * A hard limit refuses nothing: docs/api.md has no status for "over a usage limit" (its
 * 422 quota_exceeded is about how many resources a team holds), so it is a notice only.
 *
 * Each threshold emits once per period and value: the event's id is derived from the team,
 * the period, the metric and the value (the bus drops a second publish of an id), and the
 * emission is then noted in the period's notices record, which later checks read first.
 * The leader checks every CLOUDPLANE_USAGE_FLUSH_SECONDS.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { EventBus } from '../events/types';
import type { CloudEvent } from '../resources/cloud-event';
import type { Store } from '../store/types';
import { unitOf } from './metering';
import { LIMITS_NAME, NOTICES_PREFIX, swapUntilDone } from './records';
import { metricQuantities, usageReport } from './report';
import type { UsageCounters } from './counters';
import { textOf } from '../lib/unknown-values';
import { Periodic } from '../lib/periodic';

export const THRESHOLD_REACHED = 'usage.threshold_reached';
export const OVERAGE = 'usage.overage';

export interface MetricLimit {
  soft: number | null;
  hard: number | null;
}
export type UsageLimits = Record<string, MetricLimit>;

/** The limits record's `limits`, as writeLimits wrote them (from limits the API validated). */
const parseLimits = (text: string): UsageLimits => JSON.parse(text) as UsageLimits;

export async function readLimits(store: Store, team: string): Promise<UsageLimits> {
  const record = await store.records.get(team, LIMITS_NAME);
  return record ? parseLimits(record.limits) : {};
}

export async function writeLimits(store: Store, team: string, limits: UsageLimits): Promise<void> {
  await store.records.put(team, LIMITS_NAME, { limits: JSON.stringify(limits) });
}

/** The calendar month (UTC) holding `at`: the period thresholds are judged over. */
export function periodOf(at: Date): { start: Date; end: Date; name: string } {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { start, end, name: start.toISOString().slice(0, 7) };
}

interface Crossing {
  type: typeof THRESHOLD_REACHED | typeof OVERAGE;
  metric: string;
  threshold: number;
  quantity: number;
}

/** The thresholds the quantities have reached (soft) or passed (hard). */
export function crossings(limits: UsageLimits, quantities: Record<string, number>): Crossing[] {
  const found: Crossing[] = [];
  for (const [metric, limit] of Object.entries(limits)) {
    const quantity = quantities[metric] ?? 0;
    if (limit.soft !== null && quantity >= limit.soft) found.push({ type: THRESHOLD_REACHED, metric, threshold: limit.soft, quantity });
    if (limit.hard !== null && quantity > limit.hard) found.push({ type: OVERAGE, metric, threshold: limit.hard, quantity });
  }
  return found;
}

/** A key of the notices record; Kubernetes allows only `[-._a-zA-Z0-9]` in a ConfigMap's keys (`1e+21` has a `+`). */
const noticeKey = (c: Crossing) => `${c.type === OVERAGE ? 'hard' : 'soft'}.${c.metric}.${String(c.threshold).replace(/[^-._a-zA-Z0-9]/g, '_')}`;

export class ThresholdWatch {
  private readonly periodic: Periodic;

  constructor(private readonly deps: { store: Store; bus: EventBus; counters: UsageCounters; logger: Logger; intervalMs: number }) {
    this.periodic = new Periodic(
      deps.intervalMs,
      () => this.checkAll(),
      (err) => {
        deps.logger.warn({ err: textOf(err) }, 'usage thresholds not checked; the next check tries again');
      },
    );
  }

  start(): Promise<void> {
    this.periodic.start();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One check of every team with limits; one at a time. */
  check(): Promise<void> {
    return this.periodic.runNow();
  }

  private async checkAll(): Promise<void> {
    const { store } = this.deps;
    const now = new Date();
    const period = periodOf(now);
    for (const record of await store.records.list(LIMITS_NAME)) {
      if (record.name !== LIMITS_NAME) continue;
      const limits = parseLimits(record.data.limits);
      if (Object.keys(limits).length === 0) continue;
      const report = await usageReport(store, this.deps.counters, record.team, period.start, now, now.getTime());
      const found = crossings(limits, metricQuantities(report));
      if (found.length === 0) continue;
      const noticesName = `${NOTICES_PREFIX}${period.name}`;
      const notices = (await store.records.get(record.team, noticesName)) ?? {};
      for (const crossing of found.filter((c) => !notices[noticeKey(c)])) await this.emit(record.team, period, noticesName, crossing, now);
    }
  }

  private async emit(team: string, period: ReturnType<typeof periodOf>, noticesName: string, crossing: Crossing, now: Date): Promise<void> {
    const key = noticeKey(crossing);
    const id = `evt_${createHash('sha256').update(`usage\u0000${team}\u0000${period.name}\u0000${key}`).digest('hex').slice(0, 26)}`;
    const event: CloudEvent = {
      id,
      type: crossing.type,
      created_at: now.toISOString(),
      team_id: team,
      actor: 'system',
      data: {
        metric: crossing.metric,
        unit: unitOf(crossing.metric),
        quantity: crossing.quantity,
        threshold: crossing.threshold,
        period_start: period.start.toISOString(),
        period_end: period.end.toISOString(),
      },
    };
    await this.deps.bus.publish(event);
    await swapUntilDone(this.deps.store, team, noticesName, (current) => (current?.[key] ? undefined : { ...current, [key]: id }));
    this.deps.logger.info({ team, type: crossing.type, metric: crossing.metric, threshold: crossing.threshold }, 'usage threshold crossed');
  }
}

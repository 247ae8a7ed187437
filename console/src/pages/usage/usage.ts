/**
 * The team's metered usage (`GET /api/v1/usage`, docs/api.md "Usage") by day of the
 * calendar month (UTC), against its limits (`GET /api/v1/usage/limits`): what the usage
 * page draws.
 */
import { api } from '../../lib/api';

/** The metrics a limit may be set on, in the words the page uses. */
export const METRICS: { key: string; label: string }[] = [
  { key: 'resource_hours', label: 'Resource-hours, all families' },
  { key: 'server_hours', label: 'Server hours' },
  { key: 'load_balancer_hours', label: 'Load balancer hours' },
  { key: 'vpn_gateway_hours', label: 'VPN gateway hours' },
  { key: 'bucket_hours', label: 'Bucket hours' },
  { key: 'file_share_hours', label: 'File share hours' },
  { key: 'job_hours', label: 'Job hours' },
  { key: 'api_requests', label: 'API requests' },
  { key: 'webhook_deliveries', label: 'Webhook deliveries' },
];

interface Quantity {
  quantity: number;
  unit: string;
}

export interface UsageAnswer {
  since: string;
  until: string;
  resources: { family: string; plan: string; quantity: number; unit: string; resources: number }[];
  resource_hours: Quantity;
  webhook_deliveries: Quantity;
  api_requests: Quantity;
}

export interface Limit {
  soft: number | null;
  hard: number | null;
  unit: string;
}

export interface LimitsAnswer {
  limits: Record<string, Limit>;
  period: { start: string; end: string };
}

/** One day of the month: what was used that day, and since the month began. */
export interface Day {
  /** The day's start, UTC. */
  start: Date;
  used: number | null;
  sinceMonthStart: number | null;
}

const TOTALS = ['resource_hours', 'webhook_deliveries', 'api_requests'] as const;

export const unitOf = (metric: string) => (metric === 'api_requests' ? 'requests' : metric === 'webhook_deliveries' ? 'deliveries' : 'hours');

/** A metric's quantity in one answer: a total, or a family's rows summed over its plans. */
export function quantityOf(answer: UsageAnswer, metric: string): number {
  if ((TOTALS as readonly string[]).includes(metric)) return answer[metric as (typeof TOTALS)[number]].quantity;
  const family = metric.replace(/_hours$/, '');
  return answer.resources.filter((row) => row.family === family).reduce((sum, row) => sum + row.quantity, 0);
}

const DAY_MS = 86_400_000;

/** The days of the calendar month (UTC) that holds `now`. */
export function daysOfMonth(now: Date): Date[] {
  const first = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Array.from({ length: Math.round((next - first) / DAY_MS) }, (_, i) => new Date(first + i * DAY_MS));
}

/**
 * The month's usage day by day (each day asked on its own, a few at a time), so that the
 * page can show every metric without asking again. Days after today have no usage.
 */
export async function usageByDay(now: Date): Promise<{ days: Date[]; answers: (UsageAnswer | null)[] }> {
  const days = daysOfMonth(now);
  const answers: (UsageAnswer | null)[] = days.map(() => null);
  const due = days.map((day, i) => i).filter((i) => days[i].getTime() <= now.getTime());
  const ask = async (i: number) => {
    const since = days[i];
    answers[i] = await api.get<UsageAnswer>('/usage', { since: since.toISOString(), until: new Date(since.getTime() + DAY_MS).toISOString() });
  };
  // Four at a time: a month is at most 31 requests, well within the key's rate limit.
  for (let at = 0; at < due.length; at += 4) await Promise.all(due.slice(at, at + 4).map(ask));
  return { days, answers };
}

/** One metric's days: used each day and cumulated over the month. */
export function daysOf(metric: string, days: Date[], answers: (UsageAnswer | null)[]): Day[] {
  let total = 0;
  return days.map((start, i) => {
    const answer = answers[i];
    if (!answer) return { start, used: null, sinceMonthStart: null };
    const used = quantityOf(answer, metric);
    total += used;
    return { start, used, sinceMonthStart: total };
  });
}

/** A quantity as the page writes it: whole for counts, up to two decimals for hours. */
export const formatQuantity = (value: number, unit: string): string =>
  unit === 'hours' ? value.toLocaleString(undefined, { maximumFractionDigits: 2 }) : Math.round(value).toLocaleString();

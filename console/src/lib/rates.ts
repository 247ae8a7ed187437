/**
 * Rates from cumulative counters (bytes sent, sessions served, ...): the service reports
 * totals that only grow, and a chart of traffic wants how fast they grow. Each pair of
 * samples in a row gives one rate per counter, the difference over the time between them.
 */

/** One reading of a resource's counters, at a time in ms (`Date.now()` when it was read). */
export interface CounterSample {
  at: number;
  counters: Record<string, number>;
}

/** A counter drawn as a rate. */
export interface CounterSeries {
  /** The counter's key in a sample's `counters`. */
  key: string;
  /** What its rate is called in the legend, the sentence and the table: "Sent". */
  label: string;
  colour: string;
}

/** The rates between two samples in a row, per second, stamped with the later sample's time. */
export interface RatePoint {
  at: number;
  /** Per counter; null where the counter went down (it was reset: the resource was replaced or restarted) or is missing. */
  rates: Record<string, number | null>;
}

export function ratesOf(samples: readonly CounterSample[], keys: readonly string[]): RatePoint[] {
  const points: RatePoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const before = samples[i - 1];
    const after = samples[i];
    const seconds = (after.at - before.at) / 1000;
    if (seconds <= 0) continue;
    const rates: Record<string, number | null> = {};
    for (const key of keys) {
      const from = before.counters[key];
      const to = after.counters[key];
      rates[key] = typeof from === 'number' && typeof to === 'number' && to >= from ? (to - from) / seconds : null;
    }
    points.push({ at: after.at, rates });
  }
  return points;
}

/** A rate of bytes as people read it: `12.3 KiB/s`. */
export function formatByteRate(perSecond: number | null): string {
  if (perSecond === null) return '—';
  const units = ['B/s', 'KiB/s', 'MiB/s', 'GiB/s'];
  let value = perSecond;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

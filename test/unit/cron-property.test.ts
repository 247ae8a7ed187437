/**
 * nextFire and lastFire, computed on the calendar, held to the former wall-clock walk:
 * step through the instants (by half hours while the day or hour does not match, then
 * minutes, then seconds), reading each on the zone's clock. Slow but plain, so it is the
 * oracle here, over spans of a few days around daylight-saving changes.
 */
import fc from 'fast-check';
import { CronSchedule, lastFire, nextFire, parseCron } from '../../src/lib/cron';

const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** How far the oracle walks: short, so that it stays fast. */
const SPAN_MS = 3 * DAY_MS;

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(ms: number, zone: string) {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      month: 'numeric',
      day: 'numeric',
      weekday: 'short',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(ms).map((p) => [p.type, p.value]));
  return {
    month: Number(parts.month),
    day: Number(parts.day),
    weekday: DAY_NAMES.indexOf(parts.weekday.toLowerCase()),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
  };
}

function dayMatches(s: CronSchedule, clock: ReturnType<typeof wallClock>): boolean {
  if (!s.months.has(clock.month)) return false;
  const dom = s.daysOfMonth.has(clock.day);
  const dow = s.daysOfWeek.has(clock.weekday);
  if (!s.anyDayOfMonth && !s.anyDayOfWeek) return dom || dow;
  return dom && dow;
}

/** The former nextFire, its search ending at `until` instead of five years on. */
function walkedNextFire(s: CronSchedule, zone: string, after: Date, until: number): Date | null {
  let t = Math.floor(after.getTime() / 1000) * 1000 + 1000;
  while (t <= until) {
    const clock = wallClock(t, zone);
    if (!dayMatches(s, clock) || !s.hours.has(clock.hour)) {
      t += ((30 - (clock.minute % 30)) * 60 - clock.second) * 1000;
      continue;
    }
    if (!s.minutes.has(clock.minute)) {
      t += (60 - clock.second) * 1000;
      continue;
    }
    if (!s.seconds.has(clock.second)) {
      t += 1000;
      continue;
    }
    return new Date(t);
  }
  return null;
}

/** The former lastFire, on the walk above (which need not look past `now`). */
function walkedLastFire(s: CronSchedule, zone: string, since: Date, now: Date): Date | null {
  const windowsMs = [60_000, 3_600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000, Infinity];
  for (const windowMs of windowsMs) {
    const from = Math.max(since.getTime(), now.getTime() - windowMs);
    let fire = walkedNextFire(s, zone, new Date(from), now.getTime());
    if (!fire || fire.getTime() > now.getTime()) {
      if (from === since.getTime()) return null;
      continue;
    }
    for (let next = walkedNextFire(s, zone, fire, now.getTime()); next && next.getTime() <= now.getTime(); next = walkedNextFire(s, zone, next, now.getTime()))
      fire = next;
    return fire;
  }
  return null;
}

const ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'UTC'];

/** Offset changes of the zones above in 2026-2027 (Lord Howe's are 30 minutes), where the two could part. */
const CHANGES_OF: Record<string, number[]> = {
  'Europe/Berlin': ['2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2027-03-28T01:00:00Z'].map(Date.parse),
  'America/New_York': ['2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z', '2027-03-14T07:00:00Z'].map(Date.parse),
  'Australia/Lord_Howe': ['2026-04-04T15:00:00Z', '2026-10-03T15:30:00Z', '2027-04-03T15:00:00Z'].map(Date.parse),
};
const CHANGES = Object.values(CHANGES_OF).flat();

/** Each field from values that fire often enough to be seen within the oracle's span, and around the changes' hours. */
const expression = fc
  .record({
    second: fc.constantFrom('0', '0', '*/20', '15,45', '59'),
    minute: fc.constantFrom('*', '0', '30', '*/7', '15,45', '0-10', '59', '29-31'),
    hour: fc.constantFrom('*', '0', '1', '2', '3', '1-3', '*/2', '23', '0,2,12'),
    dayOfMonth: fc.constantFrom('*', '*', '1-15', '29', '*/2', '25-31', '4,25'),
    month: fc.constantFrom('*', '*', '3,4,10,11', '2', '3-4', '10-12'),
    dayOfWeek: fc.constantFrom('*', '*', '0', '1-5', '6', 'sun,sat'),
    withSeconds: fc.boolean(),
  })
  .map((f) => [...(f.withSeconds ? [f.second] : []), f.minute, f.hour, f.dayOfMonth, f.month, f.dayOfWeek].join(' '));

/** Instants mostly within a day or two of an offset change, some anywhere in 2026-2027. */
const instant = fc.oneof(
  fc.tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -2 * DAY_MS, max: 2 * DAY_MS })).map(([change, shift]) => change + shift),
  fc.integer({ min: Date.parse('2026-01-01T00:00:00Z'), max: Date.parse('2027-12-31T00:00:00Z') }),
);

describe('cron schedules on the calendar, against the wall-clock walk', () => {
  it('finds the same next time, or none within the span, in zones with and without daylight saving', () => {
    fc.assert(
      fc.property(expression, fc.constantFrom(...ZONES), instant, (text, zone, after) => {
        const s = parseCron(text);
        const walked = walkedNextFire(s, zone, new Date(after), after + SPAN_MS);
        const computed = nextFire(s, zone, new Date(after));
        if (walked) expect(computed?.toISOString()).toBe(walked.toISOString());
        else expect(computed === null || computed.getTime() > after + SPAN_MS).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('finds the same last time in (since, now]', () => {
    fc.assert(
      fc.property(expression, fc.constantFrom(...ZONES), instant, fc.integer({ min: 0, max: 2 * DAY_MS }), (text, zone, now, lookBack) => {
        const s = parseCron(text);
        const since = new Date(now - lookBack);
        expect(lastFire(s, zone, since, new Date(now))?.toISOString() ?? null).toBe(walkedLastFire(s, zone, since, new Date(now))?.toISOString() ?? null);
      }),
      { numRuns: 300 },
    );
  });

  it('fires at every time the walk fires at, in order, through the hours of each change', () => {
    // Every fire of a dense schedule over the hours around each change, one after the other.
    for (const [zone, changes] of Object.entries(CHANGES_OF)) {
      for (const text of ['*/10 * * * *', '0,30 1-3 * * *', '30 */5 * * * *']) {
        const s = parseCron(text);
        for (const change of changes) {
          const end = change + 3 * HOUR_MS;
          const computed: string[] = [];
          const walked: string[] = [];
          for (let t = nextFire(s, zone, new Date(change - 3 * HOUR_MS)); t && t.getTime() <= end; t = nextFire(s, zone, t)) computed.push(t.toISOString());
          for (let t = walkedNextFire(s, zone, new Date(change - 3 * HOUR_MS), end); t; t = walkedNextFire(s, zone, t, end)) walked.push(t.toISOString());
          expect(computed).toEqual(walked);
          expect(computed.length).toBeGreaterThan(0);
        }
      }
    }
  });
});

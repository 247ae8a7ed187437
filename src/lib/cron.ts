/**
 * Cron schedules: the standard 5-field syntax (minute hour day-of-month month day-of-week)
 * and a 6-field form with seconds first, evaluated in an IANA time zone.
 *
 * Each field takes `*`, a number, a range `a-b`, a step `*\/n`, `a-b/n` or `a/n`, and
 * comma-separated lists of these; months and weekdays also take their English three-letter
 * names, and 7 is Sunday as 0 is. As in Vixie cron, when both day-of-month and day-of-week
 * are restricted, a day matching either one fires. `@yearly`, `@annually`, `@monthly`,
 * `@weekly`, `@daily`, `@midnight` and `@hourly` stand for their usual expressions.
 *
 * Times are matched on the zone's wall clock: a time skipped by a daylight-saving jump
 * does not fire that day, and a time that occurs twice (the clock set back) fires twice.
 */

export interface CronSchedule {
  /** The expression as given. */
  source: string;
  seconds: Set<number>;
  minutes: Set<number>;
  hours: Set<number>;
  daysOfMonth: Set<number>;
  months: Set<number>;
  daysOfWeek: Set<number>;
  /** `*` in day-of-month / day-of-week (Vixie's either-day rule applies when both are restricted). */
  anyDayOfMonth: boolean;
  anyDayOfWeek: boolean;
}

export class CronSyntaxError extends Error {}

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldRule {
  name: string;
  min: number;
  max: number;
  /** Names of the values from `min` on. */
  names?: string[];
}

const SECOND: FieldRule = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldRule = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldRule = { name: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldRule = { name: 'day of month', min: 1, max: 31 };
const MONTH: FieldRule = { name: 'month', min: 1, max: 12, names: MONTH_NAMES };
// 7 is accepted as Sunday and folded onto 0 below.
const DAY_OF_WEEK: FieldRule = { name: 'day of week', min: 0, max: 7, names: DAY_NAMES };

function valueOf(text: string, rule: FieldRule): number {
  const named = rule.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + rule.min;
  if (!/^\d+$/.test(text)) throw new CronSyntaxError(`${rule.name} "${text}" is not a number${rule.names ? ' or a name' : ''}`);
  const value = Number(text);
  if (value < rule.min || value > rule.max) throw new CronSyntaxError(`${rule.name} ${value} is outside ${rule.min}-${rule.max}`);
  return value;
}

function parseField(text: string, rule: FieldRule): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined || range === '') throw new CronSyntaxError(`${rule.name} "${part}" is malformed`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) throw new CronSyntaxError(`${rule.name} step "${stepText}" must be a positive number`);
      step = Number(stepText);
    }
    let low: number;
    let high: number;
    if (range === '*') {
      [low, high] = [rule.min, rule === DAY_OF_WEEK ? 6 : rule.max];
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined) throw new CronSyntaxError(`${rule.name} "${range}" is malformed`);
      [low, high] = [valueOf(a, rule), valueOf(b, rule)];
      if (low > high) throw new CronSyntaxError(`${rule.name} range "${range}" runs backwards`);
    } else {
      low = valueOf(range, rule);
      // `a/n` means a, a+n, ... up to the field's end.
      high = stepText !== undefined ? rule.max : low;
    }
    for (let v = low; v <= high; v += step) values.add(rule === DAY_OF_WEEK && v === 7 ? 0 : v);
  }
  return values;
}

/** Parses a 5- or 6-field expression (or a macro); throws CronSyntaxError saying what is wrong. */
export function parseCron(expression: string): CronSchedule {
  const source = expression;
  const text = MACROS[expression.trim().toLowerCase()] ?? expression.trim();
  const fields = text.split(/\s+/).filter(Boolean);
  if (fields.length !== 5 && fields.length !== 6) throw new CronSyntaxError(`expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${fields.length}`);
  const [second, minute, hour, dom, month, dow] = fields.length === 6 ? fields : ['0', ...fields];
  return {
    source,
    seconds: parseField(second, SECOND),
    minutes: parseField(minute, MINUTE),
    hours: parseField(hour, HOUR),
    daysOfMonth: parseField(dom, DAY_OF_MONTH),
    months: parseField(month, MONTH),
    daysOfWeek: parseField(dow, DAY_OF_WEEK),
    anyDayOfMonth: dom === '*',
    anyDayOfWeek: dow === '*',
  };
}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

interface WallClock {
  month: number;
  day: number;
  weekday: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(ms: number, zone: string): WallClock {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', month: 'numeric', day: 'numeric', weekday: 'short', hour: 'numeric', minute: 'numeric', second: 'numeric' });
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

function dayMatches(s: CronSchedule, clock: WallClock): boolean {
  if (!s.months.has(clock.month)) return false;
  const dom = s.daysOfMonth.has(clock.day);
  const dow = s.daysOfWeek.has(clock.weekday);
  if (!s.anyDayOfMonth && !s.anyDayOfWeek) return dom || dow;
  return dom && dow;
}

/** How far ahead a schedule is searched: an expression that never fires in this span never fires (e.g. 30 February). */
const SEARCH_SPAN_MS = 5 * 366 * 86_400_000;

/**
 * The first time strictly after `after` at which the schedule fires in `zone`, or null if
 * none within five years. Moves by the largest step that cannot skip a match: to the next
 * half hour while the day or hour does not match (zone offsets change on such boundaries), then by minutes, then by seconds.
 */
export function nextFire(s: CronSchedule, zone: string, after: Date): Date | null {
  let t = Math.floor(after.getTime() / 1000) * 1000 + 1000;
  const end = after.getTime() + SEARCH_SPAN_MS;
  while (t <= end) {
    const clock = wallClock(t, zone);
    if (!dayMatches(s, clock) || !s.hours.has(clock.hour)) {
      // To the next half hour of the wall clock, so a half-hour zone offset change cannot be stepped over.
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

/**
 * The last time at or before `now` and after `since` at which the schedule fired, or null.
 * Looks back over growing windows so that a frequent schedule is not stepped through from
 * a distant `since`.
 */
export function lastFire(s: CronSchedule, zone: string, since: Date, now: Date): Date | null {
  const windowsMs = [60_000, 3_600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000, Infinity];
  for (const windowMs of windowsMs) {
    const from = Math.max(since.getTime(), now.getTime() - windowMs);
    let fire = nextFire(s, zone, new Date(from));
    if (!fire || fire.getTime() > now.getTime()) {
      if (from === since.getTime()) return null;
      continue;
    }
    for (let next = nextFire(s, zone, fire); next && next.getTime() <= now.getTime(); next = nextFire(s, zone, next)) fire = next;
    return fire;
  }
  return null;
}

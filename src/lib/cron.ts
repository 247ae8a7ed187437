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
    const [range, ...steps] = part.split('/');
    const [stepText, extra] = [steps.at(0), steps.at(1)];
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
      const [a, b, ...more] = range.split('-');
      if (more.length > 0) throw new CronSyntaxError(`${rule.name} "${range}" is malformed`);
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
  if (fields.length !== 5 && fields.length !== 6)
    throw new CronSyntaxError(`expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${fields.length}`);
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

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Any spelling of a zone is a valid key (Intl takes `europe/berlin`): kept from growing without end. */
const MAX_FORMATTERS = 1_000;

/** The wall-clock reader of `zone`, made once (a few milliseconds each); throws RangeError for a zone the runtime does not know. */
function formatterOf(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    formatters.set(zone, format);
  }
  return format;
}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** The longest day-of-month each month can have: 29 February counts (leap years). */
const LONGEST_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether the fields alone rule out every day: day-of-month restricted (day-of-week `*`)
 * and none of the months has one of the days, as 30 February or 31 April. Every month
 * has every weekday, so a day-of-week restriction, alone or by the either-day rule, always
 * leaves days; hours, minutes and seconds always hold a value.
 */
export function neverFires(s: CronSchedule): boolean {
  if (s.anyDayOfMonth || !s.anyDayOfWeek) return false;
  for (const month of s.months) {
    for (const day of s.daysOfMonth) if (day <= LONGEST_MONTH[month - 1]) return false;
  }
  return true;
}

const SECOND_MS = 1_000;
const DAY_MS = 86_400_000;

/**
 * How far from its start a search for a time goes. The longest gap the fields allow is 29
 * February's over a century year that is not a leap year (2096 to 2104): a schedule that
 * fires at all fires within it, unless all its times fall in daylight-saving gaps.
 */
const SEARCH_SPAN_MS = (8 * 366 + 2) * DAY_MS;

/** The zone's offset (wall clock minus instant, ms) at the whole second `instant`. */
function offsetAt(zone: string, instant: number): number {
  const part: Record<string, number> = {};
  for (const { type, value } of formatterOf(zone).formatToParts(instant)) part[type] = Number(value);
  return Date.UTC(part.year, part.month - 1, part.day, part.hour, part.minute, part.second) - instant;
}

/** A stretch of instants [from, to) over which the zone's offset does not change. */
interface Stretch {
  from: number;
  to: number;
  offset: number;
}

/**
 * The stretches of constant offset covering [from, to), found from the offsets at the ends
 * and, where they differ, a binary search for each change (to the second, as zones change
 * on whole seconds). Assumes the offset does not change and change back within the span,
 * which no zone does within days.
 */
function stretchesOf(zone: string, from: number, to: number): Stretch[] {
  const stretches: Stretch[] = [];
  const offsetAtEnd = offsetAt(zone, to);
  let start = from;
  let offset = offsetAt(zone, from);
  while (offset !== offsetAtEnd) {
    let before = start;
    let after = to;
    while (after - before > SECOND_MS) {
      const middle = before + Math.floor((after - before) / 2 / SECOND_MS) * SECOND_MS;
      if (offsetAt(zone, middle) === offset) before = middle;
      else after = middle;
    }
    stretches.push({ from: start, to: after, offset });
    start = after;
    offset = offsetAt(zone, after);
  }
  stretches.push({ from: start, to, offset });
  return stretches;
}

/** The schedule's values, sorted, for walking a day's times in order. */
interface SortedFields {
  seconds: number[];
  minutes: number[];
  hours: number[];
}

const sortedFields = new WeakMap<CronSchedule, SortedFields>();

function sortedOf(s: CronSchedule): SortedFields {
  let sorted = sortedFields.get(s);
  if (!sorted) {
    const ascending = (values: Set<number>) => [...values].sort((a, b) => a - b);
    sorted = { seconds: ascending(s.seconds), minutes: ascending(s.minutes), hours: ascending(s.hours) };
    sortedFields.set(s, sorted);
  }
  return sorted;
}

/** The first time of day (seconds since midnight) at or after `from` that matches, or null. */
function firstTimeOfDay(s: CronSchedule, from: number): number | null {
  const { hours, minutes, seconds } = sortedOf(s);
  const [fromHour, fromMinute, fromSecond] = [Math.floor(from / 3600), Math.floor(from / 60) % 60, from % 60];
  for (const hour of hours) {
    if (hour < fromHour) continue;
    for (const minute of minutes) {
      if (hour === fromHour && minute < fromMinute) continue;
      const floor = hour === fromHour && minute === fromMinute ? fromSecond : 0;
      const second = seconds.find((v) => v >= floor);
      if (second !== undefined) return hour * 3600 + minute * 60 + second;
    }
  }
  return null;
}

/** The last time of day (seconds since midnight) at or before `until` that matches, or null. */
function lastTimeOfDay(s: CronSchedule, until: number): number | null {
  const { hours, minutes, seconds } = sortedOf(s);
  const [untilHour, untilMinute, untilSecond] = [Math.floor(until / 3600), Math.floor(until / 60) % 60, until % 60];
  for (let h = hours.length - 1; h >= 0; h--) {
    const hour = hours[h];
    if (hour > untilHour) continue;
    for (let m = minutes.length - 1; m >= 0; m--) {
      const minute = minutes[m];
      if (hour === untilHour && minute > untilMinute) continue;
      const ceiling = hour === untilHour && minute === untilMinute ? untilSecond : 59;
      for (let i = seconds.length - 1; i >= 0; i--) if (seconds[i] <= ceiling) return hour * 3600 + minute * 60 + seconds[i];
    }
  }
  return null;
}

/** Whether the wall-clock date starting at `day` (ms, read as UTC) is a day of the schedule. */
function dayMatches(s: CronSchedule, day: number): boolean {
  const date = new Date(day);
  if (!s.months.has(date.getUTCMonth() + 1)) return false;
  const dom = s.daysOfMonth.has(date.getUTCDate());
  const dow = s.daysOfWeek.has(date.getUTCDay());
  if (!s.anyDayOfMonth && !s.anyDayOfWeek) return dom || dow;
  return dom && dow;
}

const startOfDay = (wall: number) => Math.floor(wall / DAY_MS) * DAY_MS;

/**
 * The wall-clock days of the schedule from `day` on (or back, `step` -1) while within
 * `limit`: calendar arithmetic only, a month not in the schedule skipped at once.
 */
function* daysOf(s: CronSchedule, day: number, step: 1 | -1, limit: number): Generator<number> {
  while (step > 0 ? day <= limit : day >= limit) {
    const date = new Date(day);
    if (!s.months.has(date.getUTCMonth() + 1)) {
      // To the first day of the next month, or the last of the previous one.
      day = step > 0 ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 0);
      continue;
    }
    if (dayMatches(s, day)) yield day;
    day += step * DAY_MS;
  }
}

/** Stretches of the days looked at lately, by zone and day: a schedule's next times are looked for on the same days again and again. */
const recentStretches = new Map<string, Stretch[]>();
const MAX_RECENT_STRETCHES = 4_096;

/**
 * The instants at which the wall clock shows the date `day`, as stretches of constant
 * offset: no zone is a day or more off UTC, so they lie within a day either side.
 */
function stretchesShowing(zone: string, day: number): Stretch[] {
  const key = `${zone} ${day}`;
  let stretches = recentStretches.get(key);
  if (!stretches) {
    if (recentStretches.size >= MAX_RECENT_STRETCHES) recentStretches.clear();
    stretches = stretchesOf(zone, day - DAY_MS, day + 2 * DAY_MS);
    recentStretches.set(key, stretches);
  }
  return stretches;
}

/** The first instant in [from, until] (whole seconds) at which the schedule fires on `day`, and whether the offset changed around it. */
function firstOnDay(s: CronSchedule, zone: string, day: number, from: number, until: number): { fire: number | null; offsetChanges: boolean } {
  const stretches = stretchesShowing(zone, day);
  for (const { from: start, to: end, offset } of stretches) {
    const low = Math.max(start + offset, day, from + offset);
    const high = Math.min(end + offset - SECOND_MS, day + DAY_MS - SECOND_MS, until + offset);
    if (low > high) continue;
    const time = firstTimeOfDay(s, (low - day) / SECOND_MS);
    if (time !== null && day + time * SECOND_MS <= high) return { fire: day + time * SECOND_MS - offset, offsetChanges: stretches.length > 1 };
  }
  return { fire: null, offsetChanges: stretches.length > 1 };
}

/** The last instant in [from, until] (whole seconds) at which the schedule fires on `day`, and whether the offset changed around it. */
function lastOnDay(s: CronSchedule, zone: string, day: number, from: number, until: number): { fire: number | null; offsetChanges: boolean } {
  const stretches = stretchesShowing(zone, day);
  for (let i = stretches.length - 1; i >= 0; i--) {
    const { from: start, to: end, offset } = stretches[i];
    const low = Math.max(start + offset, day, from + offset);
    const high = Math.min(end + offset - SECOND_MS, day + DAY_MS - SECOND_MS, until + offset);
    if (low > high) continue;
    const time = lastTimeOfDay(s, (high - day) / SECOND_MS);
    if (time !== null && day + time * SECOND_MS >= low) return { fire: day + time * SECOND_MS - offset, offsetChanges: stretches.length > 1 };
  }
  return { fire: null, offsetChanges: stretches.length > 1 };
}

/**
 * The first time strictly after `after` at which the schedule fires in `zone`, or null if
 * it never does (see neverFires), or not within eight years (its times all in
 * daylight-saving gaps). A calendar computation: the days of the schedule are stepped
 * through by arithmetic, and only on those is the zone asked for its offsets (a few times
 * a day, some twenty on a day its offset changes), so the work does not grow with how
 * rare the schedule is.
 */
export function nextFire(s: CronSchedule, zone: string, after: Date): Date | null {
  if (neverFires(s)) return null;
  const from = Math.floor(after.getTime() / SECOND_MS) * SECOND_MS + SECOND_MS;
  const until = from + SEARCH_SPAN_MS;
  // A day before the start's date: a clock set back over midnight shows that date again.
  const firstDay = startOfDay(from + offsetAt(zone, from)) - DAY_MS;
  for (const day of daysOf(s, firstDay, 1, startOfDay(until) + DAY_MS)) {
    const found = firstOnDay(s, zone, day, from, until);
    if (found.fire === null) continue;
    // A clock set back over midnight: the next day's first time may come before this day's.
    if (found.offsetChanges && dayMatches(s, day + DAY_MS)) {
      const nextDay = firstOnDay(s, zone, day + DAY_MS, from, until).fire;
      if (nextDay !== null && nextDay < found.fire) return new Date(nextDay);
    }
    return new Date(found.fire);
  }
  return null;
}

/**
 * The last time at or before `now` and after `since` at which the schedule fired, or null
 * (also when it did not fire in the eight years before `now`). The same calendar
 * computation as nextFire, backwards from `now`.
 */
export function lastFire(s: CronSchedule, zone: string, since: Date, now: Date): Date | null {
  if (neverFires(s)) return null;
  const until = Math.floor(now.getTime() / SECOND_MS) * SECOND_MS;
  const from = Math.max(Math.floor(since.getTime() / SECOND_MS) * SECOND_MS + SECOND_MS, until - SEARCH_SPAN_MS);
  if (from > until) return null;
  // A day after the end's date: a clock set back over midnight showed that date before.
  const lastDay = startOfDay(until + offsetAt(zone, until)) + DAY_MS;
  for (const day of daysOf(s, lastDay, -1, startOfDay(from) - 2 * DAY_MS)) {
    const found = lastOnDay(s, zone, day, from, until);
    if (found.fire === null) continue;
    // A clock set back over midnight: the day before's last time may come after this day's.
    if (found.offsetChanges && dayMatches(s, day - DAY_MS)) {
      const dayBefore = lastOnDay(s, zone, day - DAY_MS, from, until).fire;
      if (dayBefore !== null && dayBefore > found.fire) return new Date(dayBefore);
    }
    return new Date(found.fire);
  }
  return null;
}

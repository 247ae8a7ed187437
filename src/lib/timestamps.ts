/**
 * The one reading of a timestamp the API accepts: RFC 3339 (`2026-11-28T22:00:00Z`,
 * `...T23:00:00.5+01:00`) naming a time that exists. Date.parse alone is not enough: it
 * rolls `2026-02-30` over to 2 March, and answers NaN for a leap second (`23:59:60`) or an
 * offset of `+24:00`, which then compared false everywhere (a key "expiring" at NaN never
 * expired) or threw a RangeError (a 500). Every accepted text also reads the same through
 * Date.parse, so code further down may keep calling it.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

const isLeap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number) => (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]);

/** The instant `text` names, in ms since the epoch, or null if it is not a real RFC 3339 time. */
export function parseTimestamp(text: string): number | null {
  const match = RFC3339.exec(text);
  if (!match) return null;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = match.slice(1).map((part: string | undefined) => Number(part ?? 0));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  // No leap second: the platform's clock has none, and Date.parse refuses one.
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return null;
  const at = Date.parse(text);
  return Number.isFinite(at) ? at : null;
}

export const isTimestamp = (text: string): boolean => parseTimestamp(text) !== null;

/**
 * Whether a stored deadline (an expiry) has passed. One that is not a real timestamp (a
 * record edited by hand, with kubectl) counts as passed: an expiry fails closed.
 */
export function hasPassed(deadline: string, now = Date.now()): boolean {
  const at = parseTimestamp(deadline);
  return at === null || at <= now;
}

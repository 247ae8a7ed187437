import { CronSyntaxError, isTimeZone, lastFire, neverFires, nextFire, parseCron } from '../../src/lib/cron';

const next = (expr: string, after: string, zone = 'UTC') => nextFire(parseCron(expr), zone, new Date(after))?.toISOString() ?? null;

describe('cron expressions', () => {
  it('finds the next time of 5-field expressions in UTC', () => {
    expect(next('*/15 * * * *', '2026-03-01T10:07:30Z')).toBe('2026-03-01T10:15:00.000Z');
    expect(next('0 9 * * 1-5', '2026-03-06T09:00:00Z')).toBe('2026-03-09T09:00:00.000Z'); // Friday 09:00 -> Monday
    expect(next('30 2 1 * *', '2026-01-31T00:00:00Z')).toBe('2026-02-01T02:30:00.000Z');
    expect(next('0 0 29 2 *', '2026-01-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('5,10-12 0 * jan SUN', '2026-01-01T00:00:00Z')).toBe('2026-01-04T00:05:00.000Z');
    expect(next('0 0 * * 7', '2026-03-02T00:00:00Z')).toBe('2026-03-08T00:00:00.000Z'); // 7 is Sunday
    expect(next('@hourly', '2026-03-01T10:00:00Z')).toBe('2026-03-01T11:00:00.000Z');
    expect(next('@daily', '2026-03-01T10:00:00Z')).toBe('2026-03-02T00:00:00.000Z');
  });

  it('fires on either day when both day fields are restricted (Vixie cron)', () => {
    // The 13th, or any Friday: 2026-03-06 is a Friday before the 13th.
    expect(next('0 0 13 * 5', '2026-03-01T00:00:00Z')).toBe('2026-03-06T00:00:00.000Z');
    expect(next('0 0 13 * 5', '2026-03-12T00:00:00Z')).toBe('2026-03-13T00:00:00.000Z');
  });

  it('takes seconds first in the 6-field form', () => {
    expect(next('*/5 * * * * *', '2026-03-01T10:00:02Z')).toBe('2026-03-01T10:00:05.000Z');
    expect(next('* * * * * *', '2026-03-01T10:00:02.400Z')).toBe('2026-03-01T10:00:03.000Z');
    expect(next('10/20 * * * * *', '2026-03-01T10:00:31Z')).toBe('2026-03-01T10:00:50.000Z');
  });

  it('matches the wall clock of the time zone, across daylight-saving changes', () => {
    expect(next('0 9 * * *', '2026-06-01T00:00:00Z', 'Europe/Berlin')).toBe('2026-06-01T07:00:00.000Z');
    expect(next('0 9 * * *', '2026-01-10T00:00:00Z', 'Europe/Berlin')).toBe('2026-01-10T08:00:00.000Z');
    expect(next('0 9 * * *', '2026-01-10T00:00:00Z', 'Asia/Kolkata')).toBe('2026-01-10T03:30:00.000Z');
    // 02:30 does not exist in Berlin on 29 March 2026: that day has no run.
    expect(next('30 2 * * *', '2026-03-28T12:00:00Z', 'Europe/Berlin')).toBe('2026-03-30T00:30:00.000Z');
    // 02:30 happens twice on 25 October 2026: once in summer time, once in winter time.
    const first = next('30 2 * * *', '2026-10-24T12:00:00Z', 'Europe/Berlin');
    expect(first).toBe('2026-10-25T00:30:00.000Z');
    expect(next('30 2 * * *', first!, 'Europe/Berlin')).toBe('2026-10-25T01:30:00.000Z');
  });

  it('returns null for an expression that never fires', () => {
    expect(next('0 0 30 2 *', '2026-01-01T00:00:00Z')).toBeNull();
  });

  it('tells a schedule that never fires from its fields', () => {
    for (const never of ['* * * 30 2 *', '0 0 31 4,6,9,11 *', '0 0 30,31 feb *', '0 0 31 2-4/2 *']) {
      expect(neverFires(parseCron(never))).toBe(true);
      expect(next(never, '2026-01-01T00:00:00Z', 'Europe/Berlin')).toBeNull();
      expect(lastFire(parseCron(never), 'UTC', new Date('2000-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'))).toBeNull();
    }
    // 29 February comes in leap years; a weekday always comes (alone, or by the either-day rule).
    for (const fires of ['0 0 29 2 *', '0 0 30 2 1', '0 0 * 2 1', '0 0 31 1-4 *', '@yearly']) expect(neverFires(parseCron(fires))).toBe(false);
  });

  it('jumps to rare days on the calendar', () => {
    expect(next('0 0 29 2 *', '2026-11-28T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    // 2100 is no leap year: eight years from one 29 February to the next.
    expect(next('0 0 29 2 *', '2096-03-01T00:00:00Z', 'Europe/Berlin')).toBe('2104-02-28T23:00:00.000Z');
    // Either-day rule: 29 February or any Monday of February (1 February 2027 is a Monday).
    expect(next('0 0 29 2 1', '2027-01-01T00:00:00Z')).toBe('2027-02-01T00:00:00.000Z');
    expect(next('0 0 29 2 1', '2027-02-23T00:00:00Z')).toBe('2028-02-07T00:00:00.000Z');
    expect(next('0 0 29 2 1', '2028-02-28T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('0 12 31 * *', '2026-04-01T00:00:00Z', 'America/New_York')).toBe('2026-05-31T16:00:00.000Z');
  });

  it('skips a wall time the clock jumps over, and fires twice at one it repeats, half-hour shifts too', () => {
    // Lord Howe moves its clock by 30 minutes: 02:00 -> 02:30 on 4 October 2026 (+10:30 -> +11).
    expect(next('15 2 * * *', '2026-10-03T00:00:00Z', 'Australia/Lord_Howe')).toBe('2026-10-04T15:15:00.000Z');
    // ... and 02:00 -> 01:30 on 5 April 2026: 01:45 comes twice.
    const first = next('45 1 * * *', '2026-04-04T00:00:00Z', 'Australia/Lord_Howe');
    expect(first).toBe('2026-04-04T14:45:00.000Z');
    expect(next('45 1 * * *', first!, 'Australia/Lord_Howe')).toBe('2026-04-04T15:15:00.000Z');
    // New York skips 02:00-02:59 on 8 March 2026 and repeats 01:00-01:59 on 1 November 2026.
    expect(next('30 2 * * *', '2026-03-07T12:00:00Z', 'America/New_York')).toBe('2026-03-09T06:30:00.000Z');
    expect(next('30 1 * * *', '2026-11-01T05:30:00Z', 'America/New_York')).toBe('2026-11-01T06:30:00.000Z');
    // Looking back over a repeated time finds its second coming.
    expect(lastFire(parseCron('30 2 * * *'), 'Europe/Berlin', new Date('2026-10-24T00:00:00Z'), new Date('2026-10-25T02:00:00Z'))?.toISOString()).toBe(
      '2026-10-25T01:30:00.000Z',
    );
    expect(lastFire(parseCron('30 2 * * *'), 'Europe/Berlin', new Date('2026-10-24T00:00:00Z'), new Date('2026-10-25T01:00:00Z'))?.toISOString()).toBe(
      '2026-10-25T00:30:00.000Z',
    );
  });

  it('finds the last time a schedule fired, looking back no further than since', () => {
    const s = parseCron('0 * * * *');
    expect(lastFire(s, 'UTC', new Date('2026-03-01T00:00:00Z'), new Date('2026-03-03T10:59:59Z'))?.toISOString()).toBe('2026-03-03T10:00:00.000Z');
    expect(lastFire(s, 'UTC', new Date('2026-03-03T10:00:00Z'), new Date('2026-03-03T10:59:59Z'))).toBeNull();
    const perSecond = parseCron('* * * * * *');
    expect(lastFire(perSecond, 'UTC', new Date('2020-01-01T00:00:00Z'), new Date('2026-03-03T10:00:07.500Z'))?.toISOString()).toBe('2026-03-03T10:00:07.000Z');
    const yearly = parseCron('@yearly');
    expect(lastFire(yearly, 'UTC', new Date('2020-06-01T00:00:00Z'), new Date('2026-03-03T10:00:00Z'))?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    const leapDay = parseCron('0 0 29 2 *');
    expect(lastFire(leapDay, 'UTC', new Date('2020-06-01T00:00:00Z'), new Date('2026-11-28T00:00:00Z'))?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
    expect(lastFire(leapDay, 'UTC', new Date('2024-02-29T00:00:00Z'), new Date('2026-11-28T00:00:00Z'))).toBeNull();
  });

  it('refuses malformed expressions with a reason', () => {
    for (const [expr, reason] of [
      ['* * * *', /expected 5 fields/],
      ['60 * * * *', /minute 60 is outside 0-59/],
      ['* 24 * * *', /hour 24/],
      ['* * 0 * *', /day of month 0/],
      ['* * * 13 *', /month 13/],
      ['* * * * 8', /day of week 8/],
      ['*/0 * * * *', /step "0"/],
      ['5-1 * * * *', /runs backwards/],
      ['a * * * *', /not a number/],
      ['1,,2 * * * *', /malformed/],
      ['* * * * * * *', /expected 5 fields/],
    ] as const) {
      expect(() => parseCron(expr)).toThrow(CronSyntaxError);
      expect(() => parseCron(expr)).toThrow(reason);
    }
  });

  it('knows IANA time zones', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});

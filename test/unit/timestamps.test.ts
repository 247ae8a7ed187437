/** The one reading of timestamps the API accepts (lib/timestamps.ts). */
import { hasPassed, isTimestamp, parseTimestamp } from '../../src/lib/timestamps';

describe('parseTimestamp', () => {
  it.each([
    ['2026-11-28T22:00:00Z', Date.UTC(2026, 10, 28, 22)],
    ['2026-11-28T23:00:00.5+01:00', Date.UTC(2026, 10, 28, 22, 0, 0, 500)],
    ['2026-11-28t22:00:00z', Date.UTC(2026, 10, 28, 22)],
    ['2024-02-29T00:00:00-23:59', Date.UTC(2024, 1, 29, 23, 59)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
  ])('reads %s as the instant it names', (text, at) => {
    expect(parseTimestamp(text)).toBe(at);
  });

  it.each([
    ['a leap second', '2020-01-01T23:59:60Z'],
    ['30 February', '2026-02-30T00:00:00Z'],
    ['29 February of a common year', '2100-02-29T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['day 0', '2026-01-00T00:00:00Z'],
    ['hour 24', '2026-01-01T24:00:00Z'],
    ['minute 60', '2026-01-01T00:60:00Z'],
    ['an offset of 24 hours', '2026-01-01T00:00:00+24:00'],
    ['an offset of 60 minutes', '2026-01-01T00:00:00+01:60'],
    ['a space for the T', '2026-01-01 00:00:00Z'],
    ['no offset', '2026-01-01T00:00:00'],
    ['no seconds', '2026-01-01T00:00Z'],
    ['a date alone', '2026-01-01'],
    ['ten digits of fraction', '2026-01-01T00:00:00.0123456789Z'],
    ['text', 'tomorrow'],
  ])('refuses %s (%s)', (_what, text) => {
    expect(parseTimestamp(text)).toBeNull();
    expect(isTimestamp(text)).toBe(false);
  });
});

describe('hasPassed (stored expiries)', () => {
  const now = Date.UTC(2026, 10, 29, 12);
  it('answers whether a real deadline is past', () => {
    expect(hasPassed('2026-11-29T11:59:59Z', now)).toBe(true);
    expect(hasPassed('2026-11-29T12:00:00Z', now)).toBe(true);
    expect(hasPassed('2026-11-29T12:00:01Z', now)).toBe(false);
  });

  // A key or session whose expiry was written by hand (kubectl) as no real time expires
  // rather than live for ever: Date.parse gave NaN, and NaN <= now is false.
  it.each(['2020-01-01T23:59:60Z', 'never', '', '2026-02-30T00:00:00Z'])('takes %j as passed: an expiry fails closed', (deadline) => {
    expect(hasPassed(deadline, now)).toBe(true);
  });
});

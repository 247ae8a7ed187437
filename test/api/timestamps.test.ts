/**
 * Every timestamp the API accepts is a real RFC 3339 time, read by one parser
 * (lib/timestamps.ts, the ajv `date-time` format): found by an attacker's review, a key
 * created to expire at `2020-01-01T23:59:60Z` (a past leap second) was accepted and never
 * expired, and the same form in `since`/`until` answered 500.
 */
import { ApiResponse, startTestService, TestService } from '../helpers/service';

const IMPOSSIBLE = [
  '2020-01-01T23:59:60Z', // a leap second
  '2026-02-30T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00+24:00',
  '2026-01-01 00:00:00Z',
];

function expectRefused(res: ApiResponse, field: string): void {
  expect({ status: res.status, code: res.body?.error?.code, fields: res.body?.error?.details?.map((d: { field: string }) => d.field) }).toEqual({
    status: 422,
    code: 'validation_failed',
    fields: [field],
  });
}

describe('timestamps in requests', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it.each(IMPOSSIBLE)('refuses an API key expiring at %s with 422 naming expires_at', async (at) => {
    expectRefused(await t.api('POST', '/api/v1/settings/api-keys', { name: 'odd expiry', expires_at: at }), 'expires_at');
  });

  it('still takes a real future expiry, with an offset', async () => {
    const res = await t.api('POST', '/api/v1/settings/api-keys', { name: 'real expiry', expires_at: '2099-12-31T23:59:59+01:00' });
    expect(res.status).toBe(201);
  });

  /** Every query that takes a time window. */
  const WINDOWS = ['/api/v1/audit-log', '/api/v1/usage', '/api/v1/webhook-deliveries'];

  describe.each(WINDOWS)('%s', (path) => {
    it.each(
      IMPOSSIBLE.flatMap((at) => [
        ['since', at],
        ['until', at],
      ]),
    )('refuses %s=%s with 422 naming it, not 500', async (field, at) => {
      expectRefused(await t.api('GET', `${path}?${field}=${encodeURIComponent(at)}`), field);
    });

    it('answers a real window', async () => {
      const res = await t.api('GET', `${path}?since=${encodeURIComponent('2026-01-01T00:00:00+01:00')}&until=${encodeURIComponent('2026-01-02T00:00:00Z')}`);
      expect(res.status).toBe(200);
    });
  });

  it.each(
    IMPOSSIBLE.flatMap((at) => [
      ['since', at],
      ['until', at],
    ]),
  )("refuses a webhook recovery's %s=%s with 422 naming it", async (field, at) => {
    const window = { since: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00Z', [field]: at };
    expectRefused(await t.api('POST', '/api/v1/webhooks/wh_0000000000000000/recover', window), field);
  });
});

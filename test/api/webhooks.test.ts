import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { startTestService, TestService, eventually } from '../helpers/service';
import { startReceiver, eventsOf, receiversOfThisFile } from '../helpers/receiver';

const stripe = new Stripe('sk_test_unused');
const WEBHOOK_ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.002',
};

const receiver = receiversOfThisFile();

describe('webhook subscriptions', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(WEBHOOK_ENV);
  });
  afterAll(async () => t.stop());

  const subscribe = async (body: Record<string, unknown>) => {
    const res = await t.api('POST', '/api/v1/webhooks', body);
    expect(res.status).toBe(201);
    return res.body.data as { id: string; secret: string; [k: string]: unknown };
  };
  const bucket = async (name: string, region = 'fra1') => {
    const res = await t.api('POST', '/api/v1/object-storage', { name, region });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };

  it('creates, reads, lists, updates and deletes, with the secret shown on create only', async () => {
    const r = await receiver();
    const created = await t.api('POST', '/api/v1/webhooks', { url: r.url, events: ['server.*'] });
    expect(created.status).toBe(201);
    const hook = created.body.data;
    expect(created.headers.get('location')).toBe(`/api/v1/webhooks/${hook.id}`);
    expect(hook).toMatchObject({
      url: r.url,
      events: ['server.*'],
      filter: null,
      active: true,
      rate_limit_per_minute: 100,
      disabled_reason: null,
      consecutive_failures: 0,
    });
    expect(hook.id).toMatch(/^wh_[0-9a-z]{16,26}$/);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const got = await t.api('GET', `/api/v1/webhooks/${hook.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.secret).toBeUndefined();
    const listed = await t.api('GET', '/api/v1/webhooks');
    expect(listed.body.data.map((w: any) => w.id)).toContain(hook.id);
    expect(JSON.stringify(listed.body)).not.toContain(hook.secret);
    expect(JSON.stringify(got.body)).not.toContain(hook.secret);

    const patched = await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { events: ['server.running', 'job.*'], rate_limit_per_minute: 10 });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ events: ['server.running', 'job.*'], rate_limit_per_minute: 10, active: true });
    expect(JSON.stringify(patched.body)).not.toContain(hook.secret);

    const paused = await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { active: false });
    expect(paused.body.data.active).toBe(false);

    const deleted = await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ id: hook.id, status: 'deleted', active: false });
    expect((await t.api('GET', '/api/v1/webhooks')).body.data.map((w: any) => w.id)).not.toContain(hook.id);
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { active: true })).status).toBe(409);
    expect((await t.api('GET', '/api/v1/webhooks/wh_00000000000000000000')).body.error.code).toBe('webhook_not_found');

    const types = await eventually(async () => {
      const all = (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === hook.id).map((e) => e.type);
      return all.includes('webhook.deleted') ? all : null;
    });
    expect(types).toEqual(['webhook.created', 'webhook.updated', 'webhook.updated', 'webhook.deleted']);
    const events = await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z');
    expect(JSON.stringify(events)).not.toContain(hook.secret);
  });

  it('validates url, events, filter and rate limit', async () => {
    const bad = await t.api('POST', '/api/v1/webhooks', { url: 'ftp://example.com/x', events: [] });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');
    expect(bad.body.error.details.map((d: any) => d.field)).toContain('events');
    const url = await t.api('POST', '/api/v1/webhooks', { url: 'ftp://example.com/x', events: ['server.*'] });
    expect(url.status).toBe(422);
    expect(url.body.error.details).toEqual([expect.objectContaining({ field: 'url' })]);
    const twice = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*', 'server.*'] });
    expect(twice.status).toBe(422);
    expect(twice.body.error.details).toEqual([expect.objectContaining({ field: 'events' })]);
    for (const events of [['server'], ['Server.running'], ['server.*.x']]) {
      expect((await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events })).status).toBe(422);
    }
    const filter = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*'], filter: { region: 'fra1' } });
    expect(filter.status).toBe(422);
    expect(filter.body.error.details[0].field).toBe('filter.region');
    expect((await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*'], filter: { 'server.region': 3 } })).status).toBe(422);
    // At most 50 keys: every event is matched against every key of every subscription's filter.
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`server.k${i}`, 'x']));
    const tooMany = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*'], filter: keys(51) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.details[0].field).toBe('filter');
    for (const rate of [0, 300_001, 1.5]) {
      const res = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*'], rate_limit_per_minute: rate });
      expect(res.status).toBe(422);
    }
    expect((await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/h', events: ['server.*'], secret: 'x' })).status).toBe(422);
  });

  it('delivers signed events that verify with the Stripe and Standard Webhooks libraries', async () => {
    const r = await receiver();
    const hook = await subscribe({ url: r.url, events: ['bucket.*'] });
    const bucketId = await bucket('signed-1');
    await eventually(async () => r.received.length >= 2);
    const types = eventsOf(r).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['bucket.created', 'bucket.available']));
    for (const request of r.received) {
      const event = stripe.webhooks.constructEvent(request.body, request.headers['x-service-signature'] as string, hook.secret);
      expect(event).toMatchObject({ team_id: t.teamId, data: expect.objectContaining({ id: bucketId }) });
      const headers = {
        'webhook-id': request.headers['webhook-id'],
        'webhook-timestamp': request.headers['webhook-timestamp'],
        'webhook-signature': request.headers['webhook-signature'],
      } as Record<string, string>;
      expect(new Webhook(hook.secret).verify(request.body, headers)).toMatchObject({ id: JSON.parse(request.body).id });
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toMatch(/Cloudplane/);
      expect(request.headers['webhook-id']).toMatch(/^del_[0-9a-z]{20}$/);
    }
    const history = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
      return res.body.data.length === 2 && res.body.data.every((d: any) => d.status === 'succeeded') ? res.body.data : null;
    });
    expect(Object.keys(history[0]).sort()).toEqual([
      'attempt',
      'created_at',
      'error',
      'event_id',
      'event_type',
      'id',
      'next_retry_at',
      'response_status',
      'status',
      'updated_at',
      'webhook_id',
    ]);
    expect(history[0]).toMatchObject({ webhook_id: hook.id, attempt: '1/15', response_status: 200, error: null, next_retry_at: null });
    expect(history.map((d: any) => d.id).sort()).toEqual(r.received.map((x) => x.headers['webhook-id']).sort());
    const one = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries/${history[0].id}`);
    // One delivery is its list row and its attempt log.
    expect(one.body.data).toEqual({ ...history[0], attempts: [expect.objectContaining({ attempt: 1, response_status: 200, error: null })] });
    expect((await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries/del_00000000000000000000`)).body.error.code).toBe('delivery_not_found');
    expect((await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries?status=failed`)).body.data).toEqual([]);
    // Deliveries emit no events of their own.
    const all = await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z');
    expect(all.filter((e) => e.type.startsWith('delivery.'))).toEqual([]);
  });

  it('carries the four headers of the spec and the Standard Webhooks headers on every attempt of a delivery', async () => {
    // Two failures, then a success: three attempts of one delivery.
    const r = await receiver((_request, index) => ({ status: index < 2 ? 500 : 200 }));
    const hook = await subscribe({ url: r.url, events: ['bucket.created'] });
    // Seen here once the dispatcher is done with the bucket's last event, so it reaches no later test's subscription.
    const last = await receiver();
    await subscribe({ url: last.url, events: ['bucket.available'], filter: { 'bucket.name': 'headers-1' } });
    const bucketId = await bucket('headers-1');
    await eventually(async () => r.received.length >= 3);
    const deliveryId = r.received[0].headers['x-service-delivery'];
    expect(deliveryId).toMatch(/^del_[0-9a-z]{20}$/);
    for (const request of r.received.slice(0, 3)) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['x-service-event']).toBe('bucket.created');
      expect(request.headers['x-service-delivery']).toBe(deliveryId);
      expect(request.headers['webhook-id']).toBe(deliveryId);
      const event = stripe.webhooks.constructEvent(request.body, request.headers['x-service-signature'] as string, hook.secret);
      expect(event).toMatchObject({ type: 'bucket.created', data: expect.objectContaining({ id: bucketId }) });
      const headers = {
        'webhook-id': request.headers['webhook-id'],
        'webhook-timestamp': request.headers['webhook-timestamp'],
        'webhook-signature': request.headers['webhook-signature'],
      } as Record<string, string>;
      expect(new Webhook(hook.secret).verify(request.body, headers)).toMatchObject({ type: 'bucket.created' });
    }
    const delivery = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries/${deliveryId}`);
      return res.body.data?.status === 'succeeded' ? res.body.data : null;
    });
    expect(delivery).toMatchObject({ attempt: '3/15', event_type: 'bucket.created' });
    await eventually(async () => last.received.length === 1);
  });

  it('applies exact types, wildcards and filters', async () => {
    const exact = await receiver();
    const filtered = await receiver();
    const listFilter = await receiver();
    const other = await receiver();
    await subscribe({ url: exact.url, events: ['bucket.available'] });
    await subscribe({ url: filtered.url, events: ['bucket.*'], filter: { 'bucket.region': 'ams3', 'server.region': 'nowhere' } });
    await subscribe({ url: listFilter.url, events: ['bucket.created'], filter: { 'bucket.region': ['lon1', 'nyc1'] } });
    await subscribe({ url: other.url, events: ['job.*'] });
    const fra = await bucket('filter-fra', 'fra1');
    const ams = await bucket('filter-ams', 'ams3');
    const lon = await bucket('filter-lon', 'lon1');
    await eventually(async () => exact.received.length >= 3 && filtered.received.length >= 2 && listFilter.received.length >= 1);
    // Let any stray delivery arrive before asserting what did not.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      eventsOf(exact)
        .map((e) => `${e.type}:${e.data.id}`)
        .sort(),
    ).toEqual([fra, ams, lon].map((id) => `bucket.available:${id}`).sort());
    expect(eventsOf(filtered).map((e) => e.data.id)).toEqual([ams, ams]);
    expect(eventsOf(listFilter).map((e) => `${e.type}:${e.data.id}`)).toEqual([`bucket.created:${lon}`]);
    expect(other.received).toEqual([]);
  });

  it('rotates the secret: both secrets verify during the overlap', async () => {
    const r = await receiver();
    const hook = await subscribe({ url: r.url, events: ['bucket.created'] });
    const rotated = await t.api('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.data.secret;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(hook.secret);
    expect(JSON.stringify((await t.api('GET', `/api/v1/webhooks/${hook.id}`)).body)).not.toContain(fresh);
    await bucket('rotated-1');
    await eventually(async () => r.received.length >= 1);
    const [request] = r.received;
    expect(
      request.headers['x-service-signature']!.toString()
        .split(',')
        .filter((p) => p.startsWith('v1=')),
    ).toHaveLength(2);
    for (const secret of [hook.secret, fresh]) {
      expect(stripe.webhooks.constructEvent(request.body, request.headers['x-service-signature'] as string, secret)).toBeTruthy();
      const headers = {
        'webhook-id': request.headers['webhook-id'],
        'webhook-timestamp': request.headers['webhook-timestamp'],
        'webhook-signature': request.headers['webhook-signature'],
      } as Record<string, string>;
      expect(new Webhook(secret).verify(request.body, headers)).toBeTruthy();
    }
  });

  it('retries a delivery by hand: one more attempt, same delivery id', async () => {
    let fail = true;
    const r = await receiver(() => ({ status: fail ? 500 : 204 }));
    const hook = await subscribe({ url: r.url, events: ['bucket.created'] });
    await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, {});
    await bucket('manual-1');
    const first = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
      // Attempts follow each other in milliseconds at this time scale: any retry made will do.
      const delivery = res.body.data[0];
      return delivery && Number(delivery.attempt.split('/')[0]) >= 2 && delivery.status === 'pending' ? delivery : null;
    });
    expect(first).toMatchObject({ status: 'pending', response_status: 500 });
    expect(first.error).toMatch(/500/);
    fail = false;
    const retried = await t.api('POST', `/api/v1/webhooks/${hook.id}/deliveries/${first.id}/retry`);
    expect(retried.status).toBe(202);
    const done = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries/${first.id}`);
      return res.body.data.status === 'succeeded' ? res.body.data : null;
    });
    expect(done).toMatchObject({ response_status: 204, error: null, next_retry_at: null });
    expect(new Set(r.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([first.id]));
    // A finished delivery gets exactly one more attempt.
    const count = r.received.length;
    expect((await t.api('POST', `/api/v1/webhooks/${hook.id}/deliveries/${first.id}/retry`)).status).toBe(202);
    await eventually(async () => r.received.length === count + 1);
    await eventually(async () => (await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries/${first.id}`)).body.data.status === 'succeeded');
    expect((await t.api('POST', `/api/v1/webhooks/${hook.id}/deliveries/del_00000000000000000000/retry`)).body.error.code).toBe('delivery_not_found');
  });

  it('records a refused connection without naming the address or port it tried', async () => {
    const closed = await startReceiver();
    await closed.close();
    const port = new URL(closed.url).port;
    const hook = await subscribe({ url: closed.url, events: ['bucket.created'] });
    await bucket('refused-1');
    const delivery = await eventually(async () => {
      const [first] = (await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).body.data;
      return first?.error ? first : null;
    });
    expect(delivery.error).toBe('connection refused');
    expect(delivery.error).not.toContain('127.0.0.1');
    expect(delivery.error).not.toContain(port);
  });

  it('stops delivering for a deleted subscription', async () => {
    const r = await receiver(() => ({ status: 500 }));
    const hook = await subscribe({ url: r.url, events: ['bucket.created'] });
    await bucket('deleted-sub-1');
    await eventually(async () => r.received.length >= 1);
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
    const delivery = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
      return res.body.data[0]?.status === 'failed' ? res.body.data[0] : null;
    });
    expect(delivery.next_retry_at).toBeNull();
    const count = r.received.length;
    await bucket('deleted-sub-2');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(r.received.length).toBe(count);
  });
});

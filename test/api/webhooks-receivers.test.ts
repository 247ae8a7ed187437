/**
 * What webhook receivers rely on (issue 15, item 7), against real receivers: the attempt
 * log of a delivery, a 410 Gone disabling the subscription at once, `webhook.delivery_failed`
 * (and that it never loops), and the test delivery `webhook.ping`.
 */
import { startTestService, TestService, eventually } from '../helpers/service';
import { eventsOf, receiversOfThisFile } from '../helpers/receiver';
import { startMailbox, Mailbox } from '../helpers/mailbox';
import { deliveryFamily, Delivery } from '../../src/resources/webhook';

const WEBHOOK_ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001',
  CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '2000',
  // Not reached by the 15 failures of one delivery: only a 410 disables in these tests.
  CLOUDPLANE_WEBHOOK_DISABLE_AFTER: '100',
};

const receiver = receiversOfThisFile();

async function subscribe(t: TestService, body: Record<string, unknown>) {
  const res = await t.api('POST', '/api/v1/webhooks', body);
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string };
}

async function bucket(t: TestService, name: string) {
  const res = await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

async function deliveriesOf(t: TestService, webhookId: string) {
  const res = await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data as any[];
}

async function deliveryOf(t: TestService, webhookId: string, deliveryId: string) {
  const res = await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

/** A delivery that reached `status`, the only one of the subscription. */
function settled(t: TestService, webhookId: string, status: string, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const [only] = await deliveriesOf(t, webhookId);
      return only?.status === status ? only : null;
    },
    timeoutMs,
    100,
  );
}

const deliveryFailedEvents = async (t: TestService) =>
  (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.type === 'webhook.delivery_failed');

describe('webhooks for receivers', () => {
  let t: TestService;
  let mailbox: Mailbox;

  beforeAll(async () => {
    mailbox = await startMailbox();
    t = await startTestService({ ...WEBHOOK_ENV, CLOUDPLANE_SMTP_URL: mailbox.url, CLOUDPLANE_SMTP_FROM: 'Cloudplane <alerts@cloudplane.test>' });
    expect((await t.api('PATCH', '/api/v1/settings/profile', { email: 'owner@example.org' })).status).toBe(200);
  });
  afterAll(async () => {
    await t.stop();
    await mailbox.stop();
  });

  it('keeps each attempt in the delivery: time, status code, latency, the first KiB of the answer, the error', async () => {
    // Two failures with a body longer than a KiB (multi-byte characters), then a success.
    const long = 'é'.repeat(1500);
    const r = await receiver((_req, i) => (i < 2 ? { status: 500, body: long } : { status: 200, body: '{"received":true}' }));
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    await bucket(t, 'attempt-log');
    const listed = await settled(t, hook.id, 'succeeded');
    // A list stays small: the log is in the GET of one delivery only.
    expect(listed.attempts).toBeUndefined();

    const delivery = await deliveryOf(t, hook.id, listed.id);
    expect(delivery.attempt).toBe('3/15');
    expect(delivery.attempts).toHaveLength(3);
    expect(delivery.attempts.map((a: any) => a.attempt)).toEqual([1, 2, 3]);
    expect(delivery.attempts.map((a: any) => a.response_status)).toEqual([500, 500, 200]);
    for (const [i, a] of delivery.attempts.entries()) {
      expect(Number.isInteger(a.latency_ms) && a.latency_ms >= 0).toBe(true);
      expect(Math.abs(Date.parse(a.at) - r.received[i].at)).toBeLessThan(5_000);
    }
    const [first] = delivery.attempts;
    // The first 1024 bytes: 512 two-byte characters.
    expect(Buffer.byteLength(first.response_body)).toBeLessThanOrEqual(1024);
    expect(first.response_body).toBe('é'.repeat(512));
    expect(first.error).toMatch(/^receiver answered status 500/);
    expect(delivery.attempts[2]).toMatchObject({ response_status: 200, response_body: '{"received":true}', error: null });
    expect(Date.parse(delivery.attempts[1].at)).toBeGreaterThan(Date.parse(first.at));
  });

  it('keeps a failed connection as an attempt without an answer', async () => {
    const r = await receiver();
    const url = r.url;
    await r.close();
    const hook = await subscribe(t, { url, events: ['bucket.created'] });
    await bucket(t, 'attempt-refused');
    const listed = await eventually(async () => {
      const [d] = await deliveriesOf(t, hook.id);
      return d && Number(d.attempt.split('/')[0]) >= 1 ? d : null;
    });
    const [attempt] = (await deliveryOf(t, hook.id, listed.id)).attempts;
    expect(attempt).toMatchObject({ attempt: 1, response_status: null, response_body: null, error: 'connection refused' });
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
  });

  it('a 410 Gone disables the subscription at once and tells the owner as an auto-disable does', async () => {
    let gone = true;
    const r = await receiver(() => (gone ? { status: 410 } : { status: 200 }));
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    await bucket(t, 'gone-1');
    const disabled = await eventually(async () => {
      const sub = (await t.api('GET', `/api/v1/webhooks/${hook.id}`)).body.data;
      return sub.active === false ? sub : null;
    }, 15_000);
    expect(disabled).toMatchObject({ status: 'inactive', consecutive_failures: 1 });
    expect(disabled.disabled_reason).toMatch(/410 Gone/);
    expect(r.received).toHaveLength(1);
    const mail = await eventually(async () => mailbox.mails.find((m) => m.text.includes(hook.id)));
    expect(mail.to).toEqual(['owner@example.org']);
    expect(mail.text.replace(/=\s*\n/g, '')).toMatch(/410 Gone/);
    await eventually(async () =>
      (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).some((e) => e.type === 'webhook.disabled' && e.data.id === hook.id),
    );

    // Held, not failed: re-enabling sends it again.
    gone = false;
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { active: true })).status).toBe(200);
    await settled(t, hook.id, 'succeeded');
    expect(r.received).toHaveLength(2);
  });

  it('a delivery out of attempts emits webhook.delivery_failed to other subscriptions and the audit log, never in a loop', async () => {
    // A fails every delivery and also asks for delivery failures; B fails too and asks for
    // them; C is healthy. Without the guards A would be told of its own failure, and A and
    // B would tell each other of their failures forever.
    const deadA = await receiver(() => ({ status: 500, body: 'down for maintenance' }));
    const deadB = await receiver(() => ({ status: 503 }));
    const healthy = await receiver();
    const a = await subscribe(t, { url: deadA.url, events: ['bucket.created', 'webhook.delivery_failed'] });
    const b = await subscribe(t, { url: deadB.url, events: ['webhook.delivery_failed'] });
    const c = await subscribe(t, { url: healthy.url, events: ['webhook.delivery_failed'] });
    const bucketId = await bucket(t, 'exhausted');

    const failed = await settled(t, a.id, 'failed');
    const told = await eventually(async () => eventsOf(healthy).find((e) => e.type === 'webhook.delivery_failed'));
    expect(told).toMatchObject({
      team_id: t.teamId,
      actor: 'system',
      data: {
        subscription_id: a.id,
        delivery_id: failed.id,
        event_type: 'bucket.created',
        attempts: 15,
        last_error: 'receiver answered status 500: down for maintenance',
      },
    });
    const bucketEvent = (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).find((e) => e.type === 'bucket.created' && e.data.id === bucketId);
    expect(told.data.event_id).toBe(bucketEvent!.id);
    // In the audit log too.
    const audit = await t.api('GET', '/api/v1/audit-log?type=webhook.delivery_failed');
    expect(audit.body.data.map((e: any) => e.data.delivery_id)).toContain(failed.id);

    // B's delivery of it fails in turn: the end of the chain.
    const ofB = await settled(t, b.id, 'failed');
    expect(ofB.event_type).toBe('webhook.delivery_failed');
    // Its outcome and any event it caused are one write; once the relay has published its outbox, all is on the bus.
    await eventually(async () => {
      const record = (await t.service.ctx.store.get(deliveryFamily.kind, t.teamId, ofB.id)) as Delivery | undefined;
      return record && t.service.ctx.writer.relayed(record);
    });
    expect((await deliveryFailedEvents(t)).map((e) => e.data.subscription_id)).toEqual([a.id]);
    // A was not told of its own failure.
    expect((await deliveriesOf(t, a.id)).map((d) => d.event_type)).toEqual(['bucket.created']);
    expect(eventsOf(deadA).every((e) => e.type === 'bucket.created')).toBe(true);
    expect(eventsOf(healthy).filter((e) => e.type === 'webhook.delivery_failed')).toHaveLength(1);
    for (const id of [a.id, b.id, c.id]) await t.api('DELETE', `/api/v1/webhooks/${id}`);
  });

  it('keeps the latest 20 attempts when manual retries go past the schedule', async () => {
    const r = await receiver((_req, i) => ({ status: 500, body: `attempt ${i + 1}` }));
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    await bucket(t, 'attempt-cap');
    let delivery = await settled(t, hook.id, 'failed');
    for (let n = 16; n <= 21; n++) {
      expect((await t.api('POST', `/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}/retry`)).status).toBe(202);
      delivery = await eventually(async () => {
        const [d] = await deliveriesOf(t, hook.id);
        return d.status === 'failed' && d.attempt === `${n}/15` ? d : null;
      });
    }
    const full = await deliveryOf(t, hook.id, delivery.id);
    expect(full.attempts).toHaveLength(20);
    expect(full.attempts[0]).toMatchObject({ attempt: 2, response_body: 'attempt 2' });
    expect(full.attempts[19]).toMatchObject({ attempt: 21, response_body: 'attempt 21' });
    // A manual retry's failure is answered in the record, not told again as an event.
    expect((await deliveryFailedEvents(t)).filter((e) => e.data.delivery_id === delivery.id)).toHaveLength(1);
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
  });

  it('ping sends webhook.ping to that subscription only, recorded in its delivery history', async () => {
    const r = await receiver();
    const other = await receiver();
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    const everything = await subscribe(t, { url: other.url, events: ['webhook.*', 'bucket.*'] });
    const res = await t.api('POST', `/api/v1/webhooks/${hook.id}/ping`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ webhook_id: hook.id, event_type: 'webhook.ping', status: 'pending' });
    const deliveryId = res.body.data.id;
    expect(res.headers.get('location')).toBe(`/api/v1/webhooks/${hook.id}/deliveries/${deliveryId}`);

    const ping = await eventually(async () => eventsOf(r).find((e) => e.type === 'webhook.ping'));
    expect(ping).toMatchObject({ team_id: t.teamId, data: { subscription_id: hook.id, url: r.url } });
    expect(r.received[0].headers['webhook-id']).toBe(deliveryId);
    expect(r.received[0].headers['webhook-signature']).toMatch(/^v1,/);
    const delivery = await eventually(async () => {
      const d = await deliveryOf(t, hook.id, deliveryId);
      return d.status === 'succeeded' ? d : null;
    });
    expect(delivery.attempts).toHaveLength(1);
    // Not published: the subscription to everything got none of it.
    await bucket(t, 'after-ping');
    await eventually(async () => eventsOf(other).some((e) => e.type === 'bucket.created'));
    expect(eventsOf(other).some((e) => e.type === 'webhook.ping')).toBe(false);

    // Only an active subscription is pinged.
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { active: false })).status).toBe(200);
    const refused = await t.api('POST', `/api/v1/webhooks/${hook.id}/ping`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state');
    expect((await t.api('POST', '/api/v1/webhooks/wh_0000000000000000/ping')).status).toBe(404);
    for (const id of [hook.id, everything.id]) await t.api('DELETE', `/api/v1/webhooks/${id}`);
  });
  it("lists the team's deliveries across subscriptions, filtered by status, event type, subscription and time, paged by cursor", async () => {
    const start = new Date().toISOString();
    const dead = await receiver(() => ({ status: 500 }));
    const alive = await receiver();
    const failing = await subscribe(t, { url: dead.url, events: ['bucket.created'] });
    const healthy = await subscribe(t, { url: alive.url, events: ['bucket.*'] });
    await bucket(t, 'team-list-1');
    await bucket(t, 'team-list-2');
    const failed = await eventually(
      async () => {
        const rows = (await t.api('GET', `/api/v1/webhook-deliveries?status=failed&subscription_id=${failing.id}`)).body.data;
        return rows.length === 2 ? rows : null;
      },
      30_000,
      200,
    );
    expect(failed.every((d: any) => d.webhook_id === failing.id && d.status === 'failed' && d.attempt === '15/15')).toBe(true);
    const ofHealthy = await eventually(async () => {
      const rows = (await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&status=succeeded`)).body.data;
      return rows.length >= 4 ? rows : null;
    });
    expect(new Set(ofHealthy.map((d: any) => d.event_type))).toEqual(new Set(['bucket.created', 'bucket.available']));
    const created = (await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&event_type=bucket.created`)).body.data;
    expect(created).toHaveLength(2);
    // Team-wide, both subscriptions' failed ones are there.
    const allFailed = (await t.api('GET', `/api/v1/webhook-deliveries?status=failed&since=${start}&limit=100`)).body.data;
    expect(allFailed.map((d: any) => d.webhook_id)).toEqual([failing.id, failing.id]);

    // The window: nothing before start, nothing from now on.
    const later = new Date(Date.now() + 1000).toISOString();
    expect((await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&until=${start}`)).body.data).toEqual([]);
    expect((await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&since=${later}`)).body.data).toEqual([]);
    const backwards = await t.api('GET', `/api/v1/webhook-deliveries?since=${later}&until=${start}`);
    expect(backwards.status).toBe(422);
    expect(backwards.body.error.code).toBe('validation_failed');
    expect((await t.api('GET', '/api/v1/webhook-deliveries?status=lost')).status).toBe(422);

    // Cursor pagination keeps the filters.
    const first = await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&limit=3`);
    expect(first.body.data).toHaveLength(3);
    const cursor = first.body.meta.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${healthy.id}&limit=3&cursor=${encodeURIComponent(cursor)}`);
    const ids = [...first.body.data, ...second.body.data].map((d: any) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(ofHealthy.map((d: any) => d.id).sort());
    for (const id of [failing.id, healthy.id]) await t.api('DELETE', `/api/v1/webhooks/${id}`);
  });
  it('recover re-queues every failed delivery of the window once, even when called twice', async () => {
    let down = true;
    const r = await receiver(() => ({ status: down ? 503 : 200 }));
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    const failedCount = async () => (await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${hook.id}&status=failed`)).body.data.length;
    await bucket(t, 'before-window');
    await eventually(async () => (await failedCount()) === 1, 30_000, 200);
    const since = new Date().toISOString();
    await bucket(t, 'in-window-1');
    await bucket(t, 'in-window-2');
    await eventually(async () => (await failedCount()) === 3, 30_000, 200);
    const until = new Date().toISOString();

    // The receiver is back; two calls in a row.
    down = false;
    const first = await t.api('POST', `/api/v1/webhooks/${hook.id}/recover`, { since, until });
    expect(first.status).toBe(202);
    expect(first.body.data).toHaveLength(2);
    const window = first.body.data.map((d: any) => d.id).sort();
    const second = await t.api('POST', `/api/v1/webhooks/${hook.id}/recover`, { since, until });
    expect(second.status).toBe(202);
    // Progress as a client sees it: the window's failed deliveries are gone, they succeeded.
    const done = await eventually(
      async () => {
        const rows = (await t.api('GET', `/api/v1/webhook-deliveries?subscription_id=${hook.id}&since=${since}&until=${until}`)).body.data;
        return rows.every((d: any) => d.status === 'succeeded') ? rows : null;
      },
      20_000,
      100,
    );
    expect(done.map((d: any) => d.id).sort()).toEqual(window);
    // Each was sent once more, whatever the second call found.
    const attemptsOf = (id: string) => r.received.filter((x) => x.headers['webhook-id'] === id).length;
    for (const id of window) expect(attemptsOf(id)).toBe(16);
    expect(done.every((d: any) => d.attempt === '16/15')).toBe(true);
    // The delivery before the window stays failed; a third call finds nothing to do.
    expect(await failedCount()).toBe(1);
    const third = await t.api('POST', `/api/v1/webhooks/${hook.id}/recover`, { since, until });
    expect(third.body.data).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const id of window) expect(attemptsOf(id)).toBe(16);

    const backwards = await t.api('POST', `/api/v1/webhooks/${hook.id}/recover`, { since: until, until: since });
    expect(backwards.status).toBe(422);
    expect((await t.api('POST', `/api/v1/webhooks/${hook.id}/recover`, { since })).status).toBe(422);
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
  });

  it('accepts a rate limit up to 300 000 a minute and refuses more', async () => {
    const r = await receiver();
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'], rate_limit_per_minute: 300_000 });
    expect((await t.api('GET', `/api/v1/webhooks/${hook.id}`)).body.data.rate_limit_per_minute).toBe(300_000);
    const over = await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { rate_limit_per_minute: 300_001 });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('validation_failed');
    await bucket(t, 'fast-lane');
    await eventually(async () => eventsOf(r).some((e) => e.type === 'bucket.created'));
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
  });
  it('refuses ping and recover to a read_only key, and answers it the team-wide list', async () => {
    const r = await receiver();
    const hook = await subscribe(t, { url: r.url, events: ['bucket.created'] });
    const key = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'receiver-dashboards', scope: 'read_only' })).body.data.key as string;
    expect((await t.api('GET', '/api/v1/webhook-deliveries', undefined, { key })).status).toBe(200);
    for (const [path, body] of [
      [`/api/v1/webhooks/${hook.id}/ping`, undefined],
      [`/api/v1/webhooks/${hook.id}/recover`, { since: '2000-01-01T00:00:00Z', until: '2001-01-01T00:00:00Z' }],
    ] as const) {
      const refused = await t.api('POST', path, body, { key });
      expect(refused.status).toBe(403);
    }
    expect(r.received).toHaveLength(0);
    await t.api('DELETE', `/api/v1/webhooks/${hook.id}`);
  });
});

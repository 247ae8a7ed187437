import { startTestService, TestService, eventually, request } from '../helpers/service';
import { receiversOfThisFile } from '../helpers/receiver';
import { StoreUnavailableError } from '../../src/store/types';
import { webhookSecretName } from '../../src/resources/webhook';

const RETENTION_MS = 3_000;
const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // Fractional days: three seconds. Retries keep their real schedule (1 s, 5 s, 25 s...),
  // so a failing delivery stays pending for the whole test.
  CLOUDPLANE_WEBHOOK_DELIVERY_RETENTION_DAYS: String(RETENTION_MS / 86_400_000),
};

const startReceiverOfThisFile = receiversOfThisFile();

describe('webhook delivery retention', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(ENV);
  });
  afterAll(async () => t.stop());

  const receiver = (status: number) => startReceiverOfThisFile(() => ({ status }));
  const subscribe = async (url: string, name: string) => {
    const res = await t.api('POST', '/api/v1/webhooks', { url, events: ['bucket.created'], filter: { 'bucket.name': name } });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const bucket = async (name: string) => expect((await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' })).status).toBe(201);
  const deliveriesOf = async (webhookId: string) => (await t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries?limit=100`)).body.data as any[];
  const metric = async (line: string) => {
    const text = (await request(t.url, 'GET', '/metrics')).body as string;
    const found = text.split('\n').find((l) => l.startsWith(line));
    return found ? Number(found.split(' ').pop()) : 0;
  };

  it('removes finished deliveries once the retention has passed since their last attempt, and never a pending or younger one', async () => {
    const ok = await receiver(200);
    const failing = await receiver(500);
    const okHook = await subscribe(ok.url, 'kept-1');
    const failingHook = await subscribe(failing.url, 'kept-1');
    const removedBefore = await metric('cloudplane_webhook_records_removed_total{kind="delivery"}');
    await bucket('kept-1');
    // When each delivery was last seen and its last attempt's time: none may vanish sooner
    // than the retention after it, and the finished one must vanish.
    const seen = new Map<string, { updatedAt: number; status: string }>();
    const vanished: string[] = [];
    await eventually(
      async () => {
        const current = [...(await deliveriesOf(okHook)), ...(await deliveriesOf(failingHook))];
        const now = Date.now();
        for (const [id, last] of seen) {
          if (current.some((d) => d.id === id) || vanished.includes(id)) continue;
          expect(last.status).not.toBe('pending');
          expect(now).toBeGreaterThanOrEqual(last.updatedAt + RETENTION_MS);
          vanished.push(id);
        }
        for (const d of current) seen.set(d.id, { updatedAt: Date.parse(d.updated_at), status: d.status });
        return vanished.length === 1 && seen.size === 2;
      },
      20_000,
      100,
    );
    const [pending] = await deliveriesOf(failingHook);
    expect(pending).toMatchObject({ status: 'pending' });
    expect(await deliveriesOf(okHook)).toEqual([]);
    expect(vanished).not.toContain(pending.id);
    expect(await metric('cloudplane_webhook_records_removed_total{kind="delivery"}')).toBeGreaterThan(removedBefore);
    // The subscriptions themselves are not deleted, so they stay.
    expect((await t.api('GET', `/api/v1/webhooks/${okHook}`)).status).toBe(200);
  });

  it('removes a deleted subscription with its last delivery, leaving nothing of it', async () => {
    const ok = await receiver(200);
    const hook = await subscribe(ok.url, 'gone-1');
    await bucket('gone-1');
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(hook);
      return list[0]?.status === 'succeeded' ? list : null;
    });
    const deleted = await t.api('DELETE', `/api/v1/webhooks/${hook}`);
    expect(deleted.status).toBe(200);
    const deletedAt = Date.parse(deleted.body.data.deleted_at);
    // Readable as deleted, with its history, until the retention has passed.
    expect((await t.api('GET', `/api/v1/webhooks/${hook}`)).body.data.status).toBe('deleted');
    await eventually(async () => (await t.api('GET', `/api/v1/webhooks/${hook}`)).status === 404, 20_000, 100);
    expect(Date.now()).toBeGreaterThanOrEqual(deletedAt + RETENTION_MS);
    const { store } = t.service.ctx;
    expect(await store.get('WebhookSubscription', t.teamId, hook)).toBeUndefined();
    expect(await store.get('WebhookDelivery', t.teamId, delivery.id)).toBeUndefined();
    expect(await store.secrets.get(t.teamId, webhookSecretName(hook))).toBeUndefined();
    expect((await t.api('GET', `/api/v1/webhooks/${hook}/deliveries`)).body.error.code).toBe('webhook_not_found');
  });

  it('keeps sweeping through store errors and removes the records once the store takes writes again', async () => {
    const ok = await receiver(200);
    const hook = await subscribe(ok.url, 'faulty-1');
    await bucket('faulty-1');
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(hook);
      return list[0]?.status === 'succeeded' ? list : null;
    });
    // Fault injection on the real store: reading the kind (the sweep walks its keys) and removing fail for a while.
    const { store } = t.service.ctx;
    const realRemove = store.remove.bind(store);
    const realList = store.list.bind(store);
    const realKeys = store.keys.bind(store);
    const failuresBefore = await metric('cloudplane_webhook_retention_failures_total');
    let removeCalls = 0;
    store.remove = async () => {
      removeCalls++;
      throw new StoreUnavailableError(new Error('injected: the store cannot take writes'));
    };
    let listFailures = 0;
    store.keys = async (kind) => {
      if (kind === 'WebhookDelivery' && listFailures++ % 2 === 0) throw new StoreUnavailableError(new Error('injected: the store cannot be read'));
      return realKeys(kind);
    };
    try {
      // Past the retention, both kinds of failure were met, and the delivery is still there.
      await eventually(async () => removeCalls >= 1 && listFailures >= 2, 20_000, 100);
      expect(await metric('cloudplane_webhook_retention_failures_total')).toBeGreaterThanOrEqual(failuresBefore + 2);
      expect(await realList('WebhookDelivery', t.teamId)).toEqual(
        expect.arrayContaining([expect.objectContaining({ meta: expect.objectContaining({ id: delivery.id }) })]),
      );
    } finally {
      store.remove = realRemove;
      store.keys = realKeys;
    }
    await eventually(async () => (await t.api('GET', `/api/v1/webhooks/${hook}/deliveries/${delivery.id}`)).status === 404, 20_000, 100);
    expect((await request(t.url, 'GET', '/healthz')).status).toBe(200);
  });
});

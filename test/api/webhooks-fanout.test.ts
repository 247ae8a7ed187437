/**
 * One event for many subscriptions (issue 16, item 5): its deliveries are written together
 * (group commit) and each subscription gets its own, once. On the embedded store the
 * writes started in one turn of the event loop share one append and one disk flush, which
 * shows as their records becoming visible in the same turn; written one after the other,
 * each waits for a flush of its own and turns up in a turn of its own. The dispatcher
 * starts them in slices of a few milliseconds (so that a fan-out of thousands does not hold
 * the loop), so a few turns are allowed, far fewer than there are deliveries.
 */
import { startTestService, TestService, eventually } from '../helpers/service';
import { receiversOfThisFile } from '../helpers/receiver';
import { clusterMode } from '../helpers/cluster';
import { deliveryFamily } from '../../src/resources/webhook';

const WEBHOOK_ENV = { CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001' };
const SUBSCRIPTIONS = 12;
/** Turns the deliveries may become visible in: each slice holds several of them. */
const MOST_TURNS = SUBSCRIPTIONS / 3;

const receiver = receiversOfThisFile();

describe('webhook fan-out', () => {
  let t: TestService;

  beforeAll(async () => {
    t = await startTestService(WEBHOOK_ENV);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("writes an event's deliveries to all its subscriptions together, and delivers each once", async () => {
    const r = await receiver();
    const hooks: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const res = await t.api('POST', '/api/v1/webhooks', { url: r.url, events: ['bucket.created'] });
      expect(res.status).toBe(201);
      hooks.push(res.body.data.id);
    }

    // A turn counter: it moves on once per turn of the event loop (its check phase).
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const createdInTurn = new Map<string, number>();
    const unwatch = t.service.ctx.store.watch(({ type, object }) => {
      if (type === 'added' && object.meta.kind === deliveryFamily.kind) createdInTurn.set(object.meta.id, turn);
    });
    try {
      const res = await t.api('POST', '/api/v1/object-storage', { name: 'fan-out', region: 'fra1' });
      expect(res.status).toBe(201);
      const bucketId = res.body.data.id;
      await eventually(async () => r.received.filter((q) => JSON.parse(q.body).data.id === bucketId).length >= SUBSCRIPTIONS, 30_000, 50);

      // Each subscription got the event exactly once, each under a delivery id of its own.
      const received = r.received.filter((q) => JSON.parse(q.body).data.id === bucketId);
      expect(received).toHaveLength(SUBSCRIPTIONS);
      expect(new Set(received.map((q) => q.headers['webhook-id'])).size).toBe(SUBSCRIPTIONS);
      for (const hook of hooks) {
        const deliveries = await eventually(async () => {
          const list = await t.api('GET', `/api/v1/webhooks/${hook}/deliveries?limit=10`);
          return list.body.data.length === 1 && list.body.data[0].status === 'succeeded' ? list.body.data : null;
        });
        expect(deliveries[0]).toMatchObject({ event_type: 'bucket.created', status: 'succeeded' });
      }
      // The cluster store's watch reports writes as the API server streams them back, not
      // as they are committed: the turn says nothing there.
      if (!clusterMode()) {
        const ours = received.map((q) => createdInTurn.get(q.headers['webhook-id'] as string));
        expect(ours.every((x) => x !== undefined)).toBe(true);
        expect(new Set(ours).size).toBeLessThanOrEqual(MOST_TURNS);
      }
    } finally {
      ticking = false;
      unwatch();
    }
  });
});

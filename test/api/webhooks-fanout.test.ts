/**
 * One event for many subscriptions (issue 16, item 5): its deliveries are written together
 * (group commit) and each subscription gets its own, once. On the embedded store the
 * writes started together share one write to the log and one disk flush; written one
 * after the other, each would wait for a flush of its own and go into a write of its own.
 * The dispatcher starts them in short slices of the event loop (so that a fan-out of
 * thousands does not hold it), so a few writes are allowed: how many depends on how much
 * of a slice the machine gives (more on a loaded one), so the test asks that writes were
 * shared (fewer writes than deliveries, one holding several), not for a number of writes.
 */
import fs from 'node:fs';
import { startTestService, TestService, eventually } from '../helpers/service';
import { receiversOfThisFile } from '../helpers/receiver';
import { clusterMode } from '../helpers/cluster';
import { deliveryFamily } from '../../src/resources/webhook';

const WEBHOOK_ENV = { CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001' };
const SUBSCRIPTIONS = 12;
/** Deliveries the fullest write holds at least: started together, they share writes. */
const SHARED = 3;

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

    // Every write to a file while the event fans out, as text, to find the deliveries in.
    const written: string[] = [];
    const write = fs.write.bind(fs);
    const writes = jest.spyOn(fs, 'write').mockImplementation(((fd: number, buffer: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(buffer)) written.push(buffer.toString('utf8'));
      return (write as (...args: unknown[]) => void)(fd, buffer, ...rest);
    }) as typeof fs.write);
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
      // The cluster store writes to the API server, not to a log of its own.
      if (!clusterMode()) {
        const firstWrites = received.map((q) =>
          written.findIndex((text) => text.includes(`"kind":"${deliveryFamily.kind}"`) && text.includes(q.headers['webhook-id'] as string)),
        );
        expect(firstWrites.every((at) => at >= 0)).toBe(true);
        const perWrite = [...new Set(firstWrites)].map((at) => firstWrites.filter((other) => other === at).length);
        expect(perWrite.length).toBeLessThan(SUBSCRIPTIONS);
        expect(Math.max(...perWrite)).toBeGreaterThanOrEqual(SHARED);
      }
    } finally {
      writes.mockRestore();
    }
  });
});

/**
 * The leader's upkeep of secrets, on the running service (either store): a webhook's
 * rotated-away secret is dropped once its overlap has ended, and rotations never lose a
 * secret to each other or to that drop.
 */
import Stripe from 'stripe';
import { startTestService, TestService, eventually } from '../helpers/service';
import { startReceiver, Receiver } from '../helpers/receiver';
import { dropExpiredPrevious, rotateSecret } from '../../src/webhooks/secrets';
import { webhookSecretName } from '../../src/resources/webhook';

jest.setTimeout(120_000);

const stripe = new Stripe('sk_test_unused');
const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.002',
  CLOUDPLANE_SECRET_SWEEP_SECONDS: '1',
};

describe('webhook secrets after a rotation', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestService(ENV);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  const subscribe = async (events = ['bucket.*']) => {
    const res = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events });
    expect(res.status).toBe(201);
    return res.body.data as { id: string; secret: string };
  };
  const stored = (id: string) => t.service.ctx.store.getSecret(t.teamId, webhookSecretName(id));

  it('drops the previous secret once its overlap has ended, and signs with the current one alone', async () => {
    const hook = await subscribe();
    // The rotation the API does, with an overlap of one second instead of the configured day.
    const fresh = await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 1000);
    expect(await stored(hook.id)).toMatchObject({ current: fresh, previous: hook.secret });

    const dropped = await eventually(async () => {
      const data = await stored(hook.id);
      return data?.previous === '' ? data : null;
    }, 30_000);
    expect(dropped).toEqual({ current: fresh, previous: '', previous_expires_at: '' });
    expect(JSON.stringify(await t.service.ctx.store.listSecrets(''))).not.toContain(hook.secret);

    const bucket = await t.api('POST', '/api/v1/object-storage', { name: 'after-the-overlap', region: 'fra1' });
    expect(bucket.status).toBe(201);
    const delivery = await eventually(async () => receiver.received.find((r) => r.body.includes(bucket.body.data.id)), 30_000);
    const signature = String(delivery.headers['x-service-signature']);
    expect(signature.split(',').filter((part) => part.startsWith('v1='))).toHaveLength(1);
    expect(stripe.webhooks.constructEvent(delivery.body, signature, fresh)).toBeTruthy();
    expect(() => stripe.webhooks.constructEvent(delivery.body, signature, hook.secret)).toThrow();
  });

  it('keeps both secrets of two rotations at once: neither overwrites the other', async () => {
    const hook = await subscribe();
    const rotations = await Promise.all([1, 2].map(() => t.api('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`)));
    expect(rotations.map((r) => r.status)).toEqual([200, 200]);
    const issued = rotations.map((r) => r.body.data.secret as string);
    const data = (await stored(hook.id))!;
    // One is current, the other previous: the secret each caller was given still signs.
    expect([data.current, data.previous].sort()).toEqual([...issued].sort());
  });

  it('gives way to a rotation made after it looked: the drop of an expired previous secret is a swap', async () => {
    const hook = await subscribe();
    await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 3_600_000);
    const [looked] = await t.service.ctx.store.listSecrets(webhookSecretName(hook.id));
    const newest = await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 3_600_000);
    // The drop sees what it listed as expired (placed two hours on), but the secret has changed since.
    expect(await dropExpiredPrevious(t.service.ctx.store, looked, Date.now() + 7_200_000)).toBe(false);
    expect((await stored(hook.id))!.current).toBe(newest);
  });
});

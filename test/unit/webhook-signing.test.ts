import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { deliveryHeaders, newWebhookSecret, signDelivery } from '../../src/webhooks/signing';

const stripe = new Stripe('sk_test_unused');

describe('webhook signatures', () => {
  const body = JSON.stringify({ id: 'evt_abc', type: 'server.running', data: { id: 'svr_1' } });
  const now = Math.floor(Date.now() / 1000);

  it('makes whsec_ secrets of 32 random bytes', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it("verifies with Stripe's library and with Standard Webhooks' library", () => {
    const secret = newWebhookSecret();
    const headers = signDelivery([secret], 'del_123', now, body);
    expect(stripe.webhooks.constructEvent(body, headers['x-service-signature'], secret)).toMatchObject({ id: 'evt_abc' });
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: 'evt_abc' });
  });

  it('signs with both secrets during a rotation, so either verifies', () => {
    const old = newWebhookSecret();
    const next = newWebhookSecret();
    const headers = signDelivery([next, old], 'del_456', now, body);
    expect(headers['x-service-signature'].split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    for (const secret of [old, next]) {
      expect(stripe.webhooks.constructEvent(body, headers['x-service-signature'], secret)).toBeTruthy();
      expect(new Webhook(secret).verify(body, headers)).toBeTruthy();
    }
  });

  it('does not verify a tampered body or a foreign secret', () => {
    const secret = newWebhookSecret();
    const headers = signDelivery([secret], 'del_789', now, body);
    const tampered = body.replace('svr_1', 'svr_2');
    expect(() => stripe.webhooks.constructEvent(tampered, headers['x-service-signature'], secret)).toThrow();
    expect(() => new Webhook(secret).verify(tampered, headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('names the event type and the delivery beside the signatures', () => {
    const secret = newWebhookSecret();
    const headers = deliveryHeaders([secret], { id: 'del_abc', eventType: 'server.running', body }, now);
    expect(headers).toMatchObject({
      'x-service-event': 'server.running',
      'x-service-delivery': 'del_abc',
      'webhook-id': 'del_abc',
      'webhook-timestamp': String(now),
    });
    expect(stripe.webhooks.constructEvent(body, headers['x-service-signature'], secret)).toMatchObject({ id: 'evt_abc' });
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: 'evt_abc' });
  });
});

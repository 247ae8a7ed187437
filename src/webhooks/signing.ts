/**
 * Signatures of webhook deliveries, two families at once so receivers can verify with
 * the library they already have (docs/api.md "Webhook deliveries"):
 * - `X-Service-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 keyed with the whole `whsec_...`
 *   string, over `<t>.<raw body>` — the scheme Stripe's libraries check;
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`
 *   over `<id>.<t>.<raw body>`, keyed with the base64-decoded part of the secret.
 * During a secret rotation every live secret signs, so both old and new verify.
 * Beside them every attempt names its event type and delivery (`X-Service-Event`,
 * `X-Service-Delivery`: the spec's headers, by which receivers deduplicate).
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new subscription secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

export interface SignedHeaders {
  'x-service-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export interface DeliveryHeaders extends SignedHeaders {
  'x-service-event': string;
  'x-service-delivery': string;
}

/** Every header of one attempt but the transport's own (content type and length, user agent). */
export function deliveryHeaders(secrets: string[], delivery: { id: string; eventType: string; body: string }, timestamp: number): DeliveryHeaders {
  return {
    'x-service-event': delivery.eventType,
    'x-service-delivery': delivery.id,
    ...signDelivery(secrets, delivery.id, timestamp, delivery.body),
  };
}

export function signDelivery(secrets: string[], deliveryId: string, timestamp: number, body: string): SignedHeaders {
  const t = String(timestamp);
  const stripeStyle = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`);
  const standard = secrets.map((secret) => {
    const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
    return `v1,${createHmac('sha256', key).update(`${deliveryId}.${t}.${body}`).digest('base64')}`;
  });
  return {
    'x-service-signature': [`t=${t}`, ...stripeStyle].join(','),
    'webhook-id': deliveryId,
    'webhook-timestamp': t,
    'webhook-signature': standard.join(' '),
  };
}

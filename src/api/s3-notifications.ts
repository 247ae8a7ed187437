/**
 * POST /hooks/s3-notifications: where the S3 endpoint of the bucket driver `s3` sends its
 * bucket notifications (versitygw: `--event-webhook-url
 * http://s3:<secret>@<cloudplane>/hooks/s3-notifications`), each published as a `data.*`
 * event of the bucket's team (drivers/s3/notifications.ts). It exists only when
 * CLOUDPLANE_S3_NOTIFICATION_SECRET is set.
 *
 * The gateway has no API key, so this route is outside /api/v1 and guarded by its own
 * onRequest hook, in a context of its own: the request must carry the installation's secret
 * (as the password of HTTP Basic, which is what a Go client makes of a URL's user info, or
 * as a Bearer token), compared in constant time, before its body is read; refusals count
 * towards a per-address rate limit, so the secret cannot be guessed quickly. The body is
 * small (one change per message) and limited.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { ApiContext } from './context';
import { ApiError } from '../lib/errors';
import { applyRateLimit, RateLimiter } from './plugins/rate-limit';
import { bucketFamily, type Bucket } from '../resources/storage';
import { BucketOfNotification, dataEventOf, dataEventTypeOf, NotificationMessage } from '../drivers/s3/notifications';
import { eventsPublished, s3NotificationsDropped } from '../metrics';
import type { ApiApp } from './api-app';
import { promised } from '../lib/promised';

export const S3_NOTIFICATIONS_PATH = '/hooks/s3-notifications';
/** A message is one change (a DeleteObjects of 1000 keys is 1000 messages): 64 KiB is ample. */
const BODY_LIMIT = 64 * 1024;
const BASIC = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The secret a request carries: Basic's password (whatever the user name) or a Bearer token. */
function secretOf(request: FastifyRequest): string | null {
  const authorization = request.headers.authorization ?? '';
  const basic = BASIC.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? null : decoded.slice(colon + 1);
  }
  return BEARER.exec(authorization)?.[1] ?? null;
}

/** Equal digests of equal length: the comparison takes as long whatever was sent. */
const digest = (value: string) => createHash('sha256').update(value).digest();
const sameSecret = (sent: string, expected: Buffer) => timingSafeEqual(digest(sent), expected);

export async function registerS3NotificationRoute(app: ApiApp, ctx: ApiContext): Promise<void> {
  const secret = ctx.config.s3.notificationSecret;
  if (!secret) return;
  const expected = digest(secret);
  const limiter = new RateLimiter(ctx.config.rateLimitPerMinute);

  await app.register(function s3Notifications(hooks: ApiApp) {
    // Hooks and a route added: nothing to wait for, but a throw is still the registration's rejection.
    return promised(() => {
      hooks.addHook('onRequest', async (request, reply) => {
        const sent = secretOf(request);
        if (sent !== null && sameSecret(sent, expected)) return;
        await applyRateLimit(limiter, request, reply);
        throw new ApiError(
          401,
          'unauthorized',
          'Send the S3 notification secret (CLOUDPLANE_S3_NOTIFICATION_SECRET) as the password of HTTP Basic, e.g. in the URL: http://s3:<secret>@host/hooks/s3-notifications.',
        );
      });

      hooks.post(S3_NOTIFICATIONS_PATH, {
        bodyLimit: BODY_LIMIT,
        schema: { hide: true, body: NotificationMessage },
        handler: async (request, reply) => {
          const message = request.body;
          const records = message.Records ?? [];
          const buckets = records.length > 0 ? await bucketsByBackendName(ctx) : new Map<string, BucketOfNotification>();
          for (const record of records) {
            const type = dataEventTypeOf(record.eventName);
            if (!type) {
              s3NotificationsDropped.inc({ reason: 'not_a_data_change' });
              continue;
            }
            const bucket = buckets.get(record.s3.bucket.name);
            if (!bucket) {
              s3NotificationsDropped.inc({ reason: 'unknown_bucket' });
              request.log.info(
                { s3_bucket: record.s3.bucket.name, s3_event: record.eventName },
                "dropped a notification of a bucket that is none of Cloudplane's",
              );
              continue;
            }
            const event = dataEventOf(record, type, bucket);
            // Answered only once the event is durable: the gateway does not send it again.
            await ctx.bus.publish(event);
            eventsPublished.inc({ type: event.type });
          }
          return reply.code(204).send();
        },
      });
    });
  });
}

/** Every bucket the driver made, by its name on the endpoint (the store's list is its cache, not a call). */
async function bucketsByBackendName(ctx: ApiContext): Promise<Map<string, BucketOfNotification>> {
  const buckets = new Map<string, BucketOfNotification>();
  for (const object of await ctx.store.list<Bucket['spec'], Bucket['status']>(bucketFamily.kind)) {
    const backend = object.status.external?.bucket;
    if (typeof backend === 'string' && !object.status.external?.refused)
      buckets.set(backend, { id: object.meta.id, team: object.meta.team, name: object.spec.name });
  }
  return buckets;
}

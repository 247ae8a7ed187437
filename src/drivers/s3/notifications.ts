/**
 * Bucket notifications of the S3 endpoint as `data.*` events. An S3-compatible gateway
 * (versitygw's `--event-webhook-url`; AWS's own event message has the same `Records`)
 * POSTs one message per change, each naming the backend bucket, the key and what
 * happened; this module reads such a message and says which event it is, and for which of
 * Cloudplane's buckets. It never sees an object's content, and keeps nothing of the
 * message but the key, size, ETag and the event's name (not the caller's access key).
 *
 * What each notification becomes:
 * - `s3:ObjectCreated:*` (Put, Post, Copy, CompleteMultipartUpload): `data.created`. S3
 *   does not say whether the key held an object before, so an overwrite is `data.created` too;
 * - `s3:ObjectTagging:*` and `s3:ObjectAcl:Put`: `data.updated`, the object kept and its
 *   tags or ACL changed;
 * - `s3:ObjectRemoved:*` (Delete, DeleteObjects, DeleteMarkerCreated): `data.destroyed`;
 * - anything else (a restore, the gateway's `s3:TestEvent` when it starts): nothing.
 */
import { Type, type Static } from '@sinclair/typebox';
import { newId } from '../../lib/ids';
import type { CloudEvent } from '../../resources/cloud-event';
import { ObjectEventData } from '../../events/catalog';

export const DATA_CREATED = 'data.created';
export const DATA_UPDATED = 'data.updated';
export const DATA_DESTROYED = 'data.destroyed';

/** A notification message, as much of it as is read; everything else in it is ignored. */
export const NotificationMessage = Type.Object({
  Records: Type.Optional(
    Type.Array(
      Type.Object({
        eventName: Type.String({ maxLength: 200 }),
        s3: Type.Object({
          bucket: Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }) }),
          object: Type.Object({
            key: Type.String({ maxLength: 4096 }),
            size: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
            eTag: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
            sequencer: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
          }),
        }),
      }),
      { maxItems: 1000 },
    ),
  ),
});
export type NotificationMessage = Static<typeof NotificationMessage>;
export type NotificationRecord = NonNullable<NotificationMessage['Records']>[number];

/** The event type a notification becomes, or null for one that is no change of data. */
export function dataEventTypeOf(eventName: string): string | null {
  if (eventName.startsWith('s3:ObjectCreated:')) return DATA_CREATED;
  if (eventName.startsWith('s3:ObjectRemoved:')) return DATA_DESTROYED;
  if (eventName.startsWith('s3:ObjectTagging:') || eventName === 's3:ObjectAcl:Put') return DATA_UPDATED;
  return null;
}

/** The Cloudplane bucket a backend bucket name belongs to. */
export interface BucketOfNotification {
  id: string;
  team: string;
  name: string;
}

/** The event a notification of `bucket` becomes; `type` from dataEventTypeOf. */
export function dataEventOf(record: NotificationRecord, type: string, bucket: BucketOfNotification): CloudEvent {
  const { object } = record.s3;
  const data: ObjectEventData = {
    bucket_id: bucket.id,
    bucket_name: bucket.name,
    kind: 'object',
    key: object.key,
    size: type === DATA_CREATED ? (object.size ?? null) : null,
    // S3 quotes ETags in headers and some gateways keep the quotes in the message: the value is the same.
    etag: object.eTag ? object.eTag.replace(/^"(.*)"$/, '$1') : null,
    source_event: record.eventName,
    sequencer: object.sequencer || null,
  };
  return { id: newId('evt'), type, created_at: new Date().toISOString(), team_id: bucket.team, actor: 'system', data };
}

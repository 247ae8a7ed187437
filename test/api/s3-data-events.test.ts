/**
 * `data.*` events from a real S3 endpoint's bucket notifications: versitygw
 * (test/helpers/s3-server.ts) sends each change to POST /hooks/s3-notifications through
 * its webhook event sink, and a real receiver subscribed to `data.*` gets them. Objects are
 * written with @aws-sdk/client-s3, a client no one here wrote. Runs on both stores.
 */
import { randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { eventually, request, startTestService, TestService } from '../helpers/service';
import { startS3Server, S3Server } from '../helpers/s3-server';
import { eventsOf, inCreatedOrder, startReceiver, Receiver } from '../helpers/receiver';
import { S3_NOTIFICATIONS_PATH } from '../../src/api/s3-notifications';

jest.setTimeout(120_000);

describe("data.* events from the S3 endpoint's bucket notifications", () => {
  let s3: S3Server;
  let client: S3Client;
  let t: TestService;
  let receiver: Receiver;
  const secret = randomBytes(24).toString('base64url');

  beforeAll(async () => {
    s3 = await startS3Server();
    client = s3.client();
    t = await startTestService({
      ...s3.env,
      CLOUDPLANE_S3_BUCKET_PREFIX: 'cpd',
      CLOUDPLANE_S3_NOTIFICATION_SECRET: secret,
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });
    // The secret rides in the URL's user info, which the gateway's Go client sends as HTTP Basic.
    const hook = new URL(S3_NOTIFICATIONS_PATH, t.url);
    hook.username = 's3';
    hook.password = secret;
    await s3.sendNotificationsTo(hook.toString());
    receiver = await startReceiver();
    const subscribed = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['data.*'] });
    expect(subscribed.status).toBe(201);
  });
  afterAll(async () => {
    await t?.stop();
    client?.destroy();
    await s3?.stop();
    await receiver?.close();
  });

  async function availableBucket(name: string): Promise<any> {
    const created = await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' });
    expect(created.status).toBe(201);
    return eventually(async () => {
      const res = await t.api('GET', `/api/v1/object-storage/${created.body.data.id}`);
      return res.body.data.status === 'available' ? res.body.data : null;
    }, 30_000);
  }

  const dataEventsOf = (bucketId: string) => inCreatedOrder(eventsOf(receiver).filter((e) => e.type.startsWith('data.') && e.data.bucket_id === bucketId));
  const received = (bucketId: string, count: number) =>
    eventually(async () => (dataEventsOf(bucketId).length >= count ? dataEventsOf(bucketId) : null), 30_000);
  const droppedUnknown = async () => {
    const text = (await request(t.url, 'GET', '/metrics')).body as string;
    return Number(/^cloudplane_s3_notifications_dropped_total\{reason="unknown_bucket"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };

  it('tells a write, an overwrite, a tagging and a delete of an object as data.created, data.created, data.updated, data.destroyed, in order', async () => {
    const bucket = await availableBucket('events');
    expect(bucket.data_events).toBe(true);
    const put = await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'notes/a.txt', Body: 'one' }));
    await received(bucket.id, 1);
    const overwrite = await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'notes/a.txt', Body: 'two!' }));
    await received(bucket.id, 2);
    await client.send(new PutObjectTaggingCommand({ Bucket: bucket.s3_bucket, Key: 'notes/a.txt', Tagging: { TagSet: [{ Key: 'kept', Value: 'yes' }] } }));
    await received(bucket.id, 3);
    await client.send(new DeleteObjectCommand({ Bucket: bucket.s3_bucket, Key: 'notes/a.txt' }));
    const events = await received(bucket.id, 4);

    expect(events.map((e) => e.type)).toEqual(['data.created', 'data.created', 'data.updated', 'data.destroyed']);
    const base = { bucket_id: bucket.id, bucket_name: 'events', kind: 'object', key: 'notes/a.txt' };
    const unquoted = (etag: string | undefined) => etag!.replace(/"/g, '');
    expect(events[0].data).toEqual({ ...base, size: 3, etag: unquoted(put.ETag), source_event: 's3:ObjectCreated:Put', sequencer: expect.any(String) });
    expect(events[1].data).toEqual({ ...base, size: 4, etag: unquoted(overwrite.ETag), source_event: 's3:ObjectCreated:Put', sequencer: expect.any(String) });
    expect(events[2].data).toMatchObject({ ...base, size: null, source_event: 's3:ObjectTagging:Put' });
    expect(events[3].data).toMatchObject({ ...base, size: null, source_event: 's3:ObjectRemoved:Delete' });
    for (const event of events) expect(event).toMatchObject({ team_id: t.teamId, actor: 'system' });
    // Like every event, they are in the team's audit log.
    const audited = await eventually(async () => {
      const res = await t.api('GET', '/api/v1/audit-log?type=data.*&order=asc&limit=100');
      const mine = res.body.data.filter((e: any) => e.data.bucket_id === bucket.id);
      return mine.length >= 4 && mine;
    });
    expect(audited.map((e: any) => e.id)).toEqual(events.map((e) => e.id));
  });

  it('tells a copy and a completed multipart upload as data.created, and a DeleteObjects as data.destroyed', async () => {
    const bucket = await availableBucket('copies');
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'original', Body: 'abc' }));
    await received(bucket.id, 1);
    await client.send(new CopyObjectCommand({ Bucket: bucket.s3_bucket, Key: 'copy', CopySource: `${bucket.s3_bucket}/original` }));
    await received(bucket.id, 2);
    const upload = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket.s3_bucket, Key: 'big' }));
    const part = await client.send(new UploadPartCommand({ Bucket: bucket.s3_bucket, Key: 'big', UploadId: upload.UploadId, PartNumber: 1, Body: 'part one' }));
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket.s3_bucket,
        Key: 'big',
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    await received(bucket.id, 3);
    await client.send(new DeleteObjectsCommand({ Bucket: bucket.s3_bucket, Delete: { Objects: [{ Key: 'copy' }, { Key: 'big' }] } }));
    const events = await received(bucket.id, 5);
    expect(events.slice(0, 3).map((e) => [e.type, e.data.key, e.data.source_event])).toEqual([
      ['data.created', 'original', 's3:ObjectCreated:Put'],
      ['data.created', 'copy', 's3:ObjectCreated:Copy'],
      ['data.created', 'big', 's3:ObjectCreated:CompleteMultipartUpload'],
    ]);
    // The gateway sends the keys of one DeleteObjects each on its own: in either order.
    expect(
      events
        .slice(3)
        .map((e) => [e.type, e.data.key, e.data.source_event])
        .sort(),
    ).toEqual([
      ['data.destroyed', 'big', 's3:ObjectRemoved:DeleteObjects'],
      ['data.destroyed', 'copy', 's3:ObjectRemoved:DeleteObjects'],
    ]);
  });

  it('tells the objects a forced deletion of the bucket removes as data.destroyed', async () => {
    const bucket = await availableBucket('doomed');
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'left-behind.txt', Body: 'bye' }));
    await received(bucket.id, 1);
    expect((await t.api('DELETE', `/api/v1/object-storage/${bucket.id}?force=true`)).status).toBe(200);
    const events = await received(bucket.id, 2);
    expect(events.map((e) => [e.type, e.data.key])).toEqual([
      ['data.created', 'left-behind.txt'],
      ['data.destroyed', 'left-behind.txt'],
    ]);
    expect(events[1].data.source_event).toBe('s3:ObjectRemoved:DeleteObjects');
  });

  it("drops, with a metric, the notifications of a bucket that is not Cloudplane's", async () => {
    const before = await droppedUnknown();
    await client.send(new CreateBucketCommand({ Bucket: 'not-cloudplanes' }));
    await client.send(new PutObjectCommand({ Bucket: 'not-cloudplanes', Key: 'x', Body: 'x' }));
    await eventually(async () => (await droppedUnknown()) > before, 30_000);
    expect(eventsOf(receiver).filter((e) => e.data.key === 'x')).toEqual([]);
  });

  describe('POST /hooks/s3-notifications', () => {
    const message = (bucket: string, key: string) => ({
      Records: [{ eventName: 's3:ObjectCreated:Put', s3: { bucket: { name: bucket }, object: { key, size: 1, eTag: 'abc', sequencer: '9' } } }],
    });
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    const post = (authorization: string | undefined, body: unknown, rawBody?: string) =>
      request(t.url, 'POST', S3_NOTIFICATIONS_PATH, rawBody === undefined ? body : undefined, {
        headers: { ...(authorization ? { authorization } : {}), ...(rawBody === undefined ? {} : { 'content-type': 'application/json' }) },
        rawBody,
      });

    it('refuses a message without the secret or with a wrong one, before reading its body, and publishes nothing for it', async () => {
      const bucket = await availableBucket('forged');
      const forged = message(bucket.s3_bucket, 'forged.txt');
      for (const authorization of [
        undefined,
        basic('s3', `${secret}x`),
        basic('s3', secret.slice(1)),
        `Bearer ${secret.toUpperCase()}`,
        basic(secret, 'wrong'),
      ]) {
        const refused = await post(authorization, forged);
        expect(refused.status).toBe(401);
        expect(refused.body.error.code).toBe('unauthorized');
        expect(JSON.stringify(refused.body)).not.toContain(secret);
      }
      // The guard is the route's context, not a check of the URL: other spellings of the path get no further.
      for (const spelling of [
        '/%68ooks/s3-notifications',
        '/hooks//s3-notifications',
        '/hooks/s3-notifications/',
        '/hooks/./s3-notifications',
        '/HOOKS/S3-NOTIFICATIONS',
      ]) {
        const res = await request(t.url, 'POST', spelling, forged);
        expect([spelling, [401, 404].includes(res.status)]).toEqual([spelling, true]);
      }
      // A body far past the limit is not read without the secret: 401, not 413.
      const huge = JSON.stringify({ Records: [], padding: 'x'.repeat(200 * 1024) });
      expect((await post(basic('s3', 'wrong'), undefined, huge)).status).toBe(401);
      const tooLarge = await post(basic('s3', secret), undefined, huge);
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.body.error.code).toBe('payload_too_large');

      // With the secret, the same message is published.
      expect((await post(basic('s3', secret), forged)).status).toBe(204);
      // Received before the next is sent: two events of one millisecond have no order to check.
      await received(bucket.id, 1);
      expect((await post(`Bearer ${secret}`, message(bucket.s3_bucket, 'bearer.txt'))).status).toBe(204);
      // In the order they happened: any event of a refused message would have come first.
      const events = await eventually(async () => dataEventsOf(bucket.id).some((e) => e.data.key === 'bearer.txt') && dataEventsOf(bucket.id), 30_000);
      expect(events.map((e) => e.data.key)).toEqual(['forged.txt', 'bearer.txt']);
    });

    it("answers a malformed message 422 and the gateway's test message 204 with nothing published", async () => {
      const bad = await post(basic('s3', secret), { Records: [{ eventName: 's3:ObjectCreated:Put' }] });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe('validation_failed');
      expect((await post(basic('s3', secret), { Service: 'S3', Event: 's3:TestEvent', Bucket: 'Test-Bucket' })).status).toBe(204);
    });
  });
});

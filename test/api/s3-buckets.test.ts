/**
 * The bucket driver `s3` against a real S3 server (versitygw, test/helpers/s3-server.ts),
 * checked with @aws-sdk/client-s3 and plain unsigned HTTP, clients no one here wrote. It
 * runs in both modes (the kube API suite runs test/api with CLOUDPLANE_TEST_STORE=kubernetes).
 */
import { GetObjectCommand, HeadBucketCommand, PutBucketPolicyCommand, PutObjectCommand, S3Client, CreateMultipartUploadCommand } from '@aws-sdk/client-s3';
import { createTeam } from '../../src/accounts/bootstrap';
import { bucketFamily } from '../../src/resources/storage';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService } from '../../src/service';
import { clusterEnv, clusterMode } from '../helpers/cluster';
import { FAST_ENV, eventually, request, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { startS3Server, S3Server } from '../helpers/s3-server';
import { findIn, findInFiles } from '../helpers/secret-scan';

jest.setTimeout(120_000);

describe('buckets on a real S3 endpoint (driver s3)', () => {
  let s3: S3Server;
  let client: S3Client;
  let t: TestService;

  beforeAll(async () => {
    s3 = await startS3Server();
    client = s3.client();
    t = await startTestService({ ...s3.env, CLOUDPLANE_S3_BUCKET_PREFIX: 'cpt', CLOUDPLANE_RESYNC_SECONDS: process.env.S3_TEST_RESYNC ?? '2' });
  });
  afterAll(async () => {
    await t?.stop();
    client?.destroy();
    await s3?.stop();
  });

  const anonymousGet = (bucket: string, key: string) => fetch(`${s3.endpoint}/${bucket}/${key}`);

  async function availableBucket(name: string, isPublic = false, api = t.api): Promise<any> {
    const created = await api('POST', '/api/v1/object-storage', { name, region: 'fra1', public: isPublic });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ status: 'creating', endpoint: null, s3_bucket: null });
    return eventually(async () => {
      const res = await api('GET', `/api/v1/object-storage/${created.body.data.id}`);
      return res.body.data.status === 'available' ? res.body.data : null;
    }, 30_000);
  }

  const exists = async (bucket: string) => {
    try {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
      return true;
    } catch (err) {
      if ((err as Error).name === 'NotFound') return false;
      throw err;
    }
  };

  it('makes the bucket on the endpoint under a name that carries the team; objects go in and come out', async () => {
    const bucket = await availableBucket('photos');
    expect(bucket.endpoint).toBe(s3.endpoint);
    expect(bucket.s3_bucket).toBe(`cpt-${t.teamId.replace(/_/g, '-')}-photos`);
    // This service does not take the endpoint's notifications (no CLOUDPLANE_S3_NOTIFICATION_SECRET).
    expect(bucket.data_events).toBe(false);
    expect((await t.api('GET', `/api/v1/object-storage/${bucket.id}`)).body.meta.provider).toBe('connected');
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'cat.txt', Body: 'meow' }));
    const got = await client.send(new GetObjectCommand({ Bucket: bucket.s3_bucket, Key: 'cat.txt' }));
    expect(await got.Body!.transformToString()).toBe('meow');
  });

  it('lets anyone read the objects of a public bucket, and no one those of a private one', async () => {
    const open = await availableBucket('open-site', true);
    const closed = await availableBucket('closed-site', false);
    for (const b of [open, closed]) await client.send(new PutObjectCommand({ Bucket: b.s3_bucket, Key: 'index.html', Body: `<p>${b.name}</p>` }));
    const read = await anonymousGet(open.s3_bucket, 'index.html');
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('<p>open-site</p>');
    expect((await anonymousGet(closed.s3_bucket, 'index.html')).status).toBe(403);
    // Public read is reading objects, not listing them.
    expect((await fetch(`${s3.endpoint}/${open.s3_bucket}`)).status).toBe(403);
  });

  it('opens a private bucket by PATCH public: true, and closes it again by PATCH public: false', async () => {
    const bucket = await availableBucket('turning', false);
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'a.txt', Body: 'a' }));
    expect((await anonymousGet(bucket.s3_bucket, 'a.txt')).status).toBe(403);
    expect((await t.api('PATCH', `/api/v1/object-storage/${bucket.id}`, { public: true })).status).toBe(200);
    await eventually(async () => (await anonymousGet(bucket.s3_bucket, 'a.txt')).status === 200, 30_000);
    expect((await t.api('PATCH', `/api/v1/object-storage/${bucket.id}`, { public: false })).status).toBe(200);
    await eventually(async () => (await anonymousGet(bucket.s3_bucket, 'a.txt')).status === 403, 30_000);
  });

  it('takes anonymous access away when public turns false by a spec edit, as kubectl makes', async () => {
    const bucket = await availableBucket('turning-private', true);
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'a.txt', Body: 'a' }));
    expect((await anonymousGet(bucket.s3_bucket, 'a.txt')).status).toBe(200);
    await t.service.ctx.writer.mutateSpec(bucketFamily, t.teamId, bucket.id, (current) => ({ ...current.spec, public: false }), 'system');
    await eventually(async () => (await anonymousGet(bucket.s3_bucket, 'a.txt')).status === 403, 30_000);
  });

  it('puts back the policy when it drifts on the endpoint: a private bucket opened by hand is closed again', async () => {
    const bucket = await availableBucket('drifting');
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'a.txt', Body: 'a' }));
    // Let the passes that followed its own status writes end, so that only a later look can repair it.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const open = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: '*', Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${bucket.s3_bucket}/*`] }],
    };
    await client.send(new PutBucketPolicyCommand({ Bucket: bucket.s3_bucket, Policy: JSON.stringify(open) }));
    // The next look at the resource (the periodic resync, every 2 s here) finds the policy and deletes it.
    await eventually(async () => (await anonymousGet(bucket.s3_bucket, 'a.txt')).status === 403, 45_000, 250);
  });

  it('refuses to delete a bucket that holds objects (409 bucket_not_empty) until ?force=true, which deletes them with it', async () => {
    const bucket = await availableBucket('full-one');
    await client.send(new PutObjectCommand({ Bucket: bucket.s3_bucket, Key: 'keep/me.txt', Body: 'data' }));
    await client.send(new CreateMultipartUploadCommand({ Bucket: bucket.s3_bucket, Key: 'big.bin' }));
    const refused = await t.api('DELETE', `/api/v1/object-storage/${bucket.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('bucket_not_empty');
    expect((await t.api('GET', `/api/v1/object-storage/${bucket.id}`)).body.data.status).toBe('available');
    expect(await exists(bucket.s3_bucket)).toBe(true);

    const badForce = await t.api('DELETE', `/api/v1/object-storage/${bucket.id}?force=yes`);
    expect(badForce.status).toBe(422);
    expect(badForce.body.error.details[0].field).toBe('force');

    const forced = await t.api('DELETE', `/api/v1/object-storage/${bucket.id}?force=true`);
    expect(forced.status).toBe(200);
    expect(forced.body.data.status).toBe('deleted');
    await eventually(async () => !(await exists(bucket.s3_bucket)), 30_000);
  });

  it('deletes an empty bucket without force, and it is gone from the endpoint', async () => {
    const bucket = await availableBucket('empty-one');
    expect(await exists(bucket.s3_bucket)).toBe(true);
    const deleted = await t.api('DELETE', `/api/v1/object-storage/${bucket.id}`);
    expect(deleted.status).toBe(200);
    await eventually(async () => !(await exists(bucket.s3_bucket)), 30_000);
  });

  it('gives two teams with the same bucket name two buckets on the endpoint', async () => {
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' });
    const otherApi: TestService['api'] = (method, path, body, options = {}) => t.api(method, path, body, { ...options, key: other.token });
    const mine = await availableBucket('shared-name');
    const theirs = await availableBucket('shared-name', false, otherApi);
    expect(mine.name).toBe(theirs.name);
    expect(mine.s3_bucket).not.toBe(theirs.s3_bucket);
    await client.send(new PutObjectCommand({ Bucket: mine.s3_bucket, Key: 'who', Body: 'mine' }));
    await client.send(new PutObjectCommand({ Bucket: theirs.s3_bucket, Key: 'who', Body: 'theirs' }));
    const read = async (b: string) => (await client.send(new GetObjectCommand({ Bucket: b, Key: 'who' }))).Body!.transformToString();
    expect([await read(mine.s3_bucket), await read(theirs.s3_bucket)]).toEqual(['mine', 'theirs']);
  });

  it('shows the endpoint failing in meta.provider, keeps a bucket made meanwhile creating, and converges once it is back', async () => {
    const before = await availableBucket('before-outage');
    await s3.kill();
    try {
      const during = await t.api('POST', '/api/v1/object-storage', { name: 'during-outage', region: 'fra1', public: true });
      expect(during.status).toBe(201);
      const provider = await eventually(async () => {
        const res = await t.api('GET', `/api/v1/object-storage/${during.body.data.id}`);
        return ['degraded', 'unavailable'].includes(res.body.meta.provider) ? res.body : null;
      }, 30_000);
      expect(provider.data.status).toBe('creating');
      // Why it is not ready is on the bucket itself: the error its passes fail with, as the Synced condition too.
      const failing = await eventually(async () => {
        const res = await t.api('GET', `/api/v1/object-storage/${during.body.data.id}`);
        return res.body.data.reconcile_error ? res.body.data : null;
      }, 30_000);
      expect(failing.reconcile_error.message).toMatch(/\S/);
      expect(Date.parse(failing.reconcile_error.since)).not.toBeNaN();
      expect(failing.conditions).toContainEqual(
        expect.objectContaining({ type: 'Synced', status: 'False', reason: 'ReconcileError', message: failing.reconcile_error.message }),
      );
      expect(failing.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'False' }));
      expect(JSON.stringify(failing)).not.toContain(s3.secretAccessKey);
      // A delete that must ask the endpoint whether the bucket is empty cannot be answered.
      const refused = await t.api('DELETE', `/api/v1/object-storage/${before.id}`);
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('provider_unavailable');
    } finally {
      await s3.restart();
    }
    // Asked to reconcile now, it need not wait out its passes' backoff.
    const duringId = (await listed('during-outage')).id;
    expect((await t.api('POST', `/api/v1/object-storage/${duringId}/reconcile`)).status).toBe(202);
    const converged = await waitForStatus(t, `/api/v1/object-storage/${duringId}`, 'available', 60_000);
    expect(converged.s3_bucket).toMatch(/-during-outage$/);
    const healed = await eventually(async () => {
      const { data } = (await t.api('GET', `/api/v1/object-storage/${duringId}`)).body;
      return data.reconcile_error === null && data.last_handled_reconcile_at !== null ? data : null;
    }, 30_000);
    expect(healed.conditions).toContainEqual(expect.objectContaining({ type: 'Synced', status: 'True', reason: 'ReconcileSuccess' }));
    await client.send(new PutObjectCommand({ Bucket: converged.s3_bucket, Key: 'late.txt', Body: 'late' }));
    expect((await anonymousGet(converged.s3_bucket, 'late.txt')).status).toBe(200);
    await eventually(async () => (await t.api('GET', '/api/v1/object-storage')).body.meta.provider === 'connected', 30_000);
    expect((await t.api('DELETE', `/api/v1/object-storage/${before.id}`)).status).toBe(200);
    await eventually(async () => !(await exists(before.s3_bucket)), 30_000);
  });

  async function listed(name: string): Promise<any> {
    const res = await t.api('GET', '/api/v1/object-storage?limit=100');
    return res.body.data.find((b: any) => b.name === name);
  }
});

describe('the S3 secret key', () => {
  it('is in no log line (trace level, failures included) and nowhere in the data directory', async () => {
    const s3 = await startS3Server();
    const dataDir = tempDataDir();
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const cluster = clusterMode() ? await clusterEnv(dataDir) : {};
    const config = loadConfig({ ...FAST_ENV, CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: dataDir, ...cluster, ...s3.env });
    const service = await startService(config, createLogger('trace', sink));
    try {
      const key = service.bootstrap!.token;
      const api = (method: string, path: string, body?: unknown) => request(service.url, method, path, body, { key });
      const bucket = (await api('POST', '/api/v1/object-storage', { name: 'secretive', region: 'fra1', public: true })).body.data;
      await eventually(async () => (await api('GET', `/api/v1/object-storage/${bucket.id}`)).body.data.status === 'available', 30_000);
      // Failures are logged with their errors: make some.
      await s3.kill();
      await api('POST', '/api/v1/object-storage', { name: 'in-the-dark', region: 'fra1' });
      expect((await api('DELETE', `/api/v1/object-storage/${bucket.id}`)).status).toBe(503);
      await eventually(async () => lines.some((line) => line.includes('reconcile failed')), 30_000);
      await s3.restart();
      expect((await api('DELETE', `/api/v1/object-storage/${bucket.id}`)).status).toBe(200);
    } finally {
      await service.stop();
      await s3.stop();
    }
    const needles = [{ label: 'the S3 secret access key', value: s3.secretAccessKey }];
    expect(lines.length).toBeGreaterThan(10);
    expect([...findIn('the log', Buffer.from(lines.join('')), needles), ...findInFiles(dataDir, needles)]).toEqual([]);
  });
});

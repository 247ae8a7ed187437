/**
 * The s3 bucket driver on its own against a real S3 server (versitygw): the backend name,
 * an idempotent create, a recorded name kept, a name another account owns, and its health through an outage:
 * unavailable while the endpoint does not answer, connected again once it does, with the
 * buckets whose calls failed meanwhile handed back to the reconciler at once.
 */
import pino from 'pino';
import { S3Client, CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { S3BucketDriver } from '../../src/drivers/s3/bucket-driver';
import { backendBucketName } from '../../src/drivers/s3/names';
import { isPublicReadPolicy, publicReadPolicy } from '../../src/drivers/s3/policy';
import type { Managed } from '../../src/drivers/types';
import type { BucketSpec } from '../../src/resources/storage';
import { eventually } from '../helpers/service';
import { startS3Server, S3Server } from '../helpers/s3-server';

jest.setTimeout(60_000);

describe('backend bucket names', () => {
  it('carry the prefix and the team, and stay within 63 characters with a hash when longer', () => {
    expect(backendBucketName('cp', 'team_abc123', 'photos')).toBe('cp-team-abc123-photos');
    const long = backendBucketName('cp', 'team_0123456789abcdefghij', 'x'.repeat(63));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^cp-team-0123456789abcdefghij-x+-[0-9a-f]{10}$/);
    expect(backendBucketName('cp', 'team_0123456789abcdefghij', `${'x'.repeat(62)}y`)).not.toBe(long);
  });
});

describe('the public-read policy', () => {
  it('is recognised by meaning, and anything more is drift', () => {
    expect(isPublicReadPolicy(publicReadPolicy('b'), 'b')).toBe(true);
    const reformatted = { Statement: { Effect: 'Allow', Principal: { AWS: ['*'] }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/*' } };
    expect(isPublicReadPolicy(JSON.stringify(reformatted), 'b')).toBe(true);
    const more = { Statement: [{ ...reformatted.Statement, Action: ['s3:GetObject', 's3:PutObject'] }] };
    expect(isPublicReadPolicy(JSON.stringify(more), 'b')).toBe(false);
    expect(isPublicReadPolicy(publicReadPolicy('other'), 'b')).toBe(false);
  });
});

describe('the s3 bucket driver against versitygw', () => {
  let s3: S3Server;
  let client: S3Client;
  let driver: S3BucketDriver;
  beforeAll(async () => {
    s3 = await startS3Server();
    client = s3.client();
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });
  beforeEach(() => {
    driver = new S3BucketDriver({
      s3: {
        endpoint: s3.endpoint,
        region: s3.region,
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
        forcePathStyle: true,
        bucketPrefix: 'drv',
      },
      logger: pino({ level: 'silent' }),
    });
  });

  const bucket = (id: string, external: Managed<BucketSpec>['external'] = null): Managed<BucketSpec> => ({
    id,
    team: 'team_t1',
    generation: 1,
    desired: { name: id.replace(/_/g, '-'), region: 'fra1', public: false },
    external,
    owner: null,
  });

  it('creates idempotently: a bucket already ours (a create whose status write was lost) is success', async () => {
    const first = await driver.create(bucket('bkt_one'));
    expect(first.external).toEqual({ bucket: 'drv-team-t1-bkt-one' });
    expect(await driver.create(bucket('bkt_one'))).toEqual(first);
    const seen = await driver.observe(bucket('bkt_one', first.external));
    expect(seen).toMatchObject({ exists: true, ready: true, upToDate: true, outputs: { endpoint: s3.endpoint, s3_bucket: 'drv-team-t1-bkt-one' } });
    expect(driver.health().state).toBe('connected');
  });

  it('keeps the name recorded at the first create, even when the prefix changes later', async () => {
    const recorded = { bucket: 'drv-team-t1-kept-name' };
    await driver.create(bucket('bkt_kept', recorded));
    await client.send(new HeadBucketCommand({ Bucket: 'drv-team-t1-kept-name' }));
  });

  it('is unavailable while the endpoint does not answer, connected once it does, and hands back the buckets it failed for', async () => {
    const made = await driver.create(bucket('bkt_steady'));
    const handedBack: string[] = [];
    const stop = driver.watchMade((team, id) => handedBack.push(`${team}/${id}`));
    await s3.kill();
    try {
      await expect(driver.create(bucket('bkt_meanwhile'))).rejects.toThrow(/S3 endpoint/);
      await expect(driver.observe(bucket('bkt_steady', made.external))).rejects.toThrow(/S3 endpoint/);
      expect(driver.health()).toMatchObject({ state: 'unavailable', reachable: false });
      expect(handedBack).toEqual([]);
    } finally {
      await s3.restart();
    }
    await eventually(async () => handedBack.length === 2, 20_000);
    expect(handedBack.sort()).toEqual(['team_t1/bkt_meanwhile', 'team_t1/bkt_steady']);
    // The outage's failures no longer count: not degraded for the rest of the health window.
    expect(driver.health()).toMatchObject({ state: 'connected', reachable: true, recentFailures: 0 });
    stop();
  });
});

describe('a bucket name another account of the endpoint owns', () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3Server({ accounts: true });
  });
  afterAll(async () => s3?.stop());

  it("fails the bucket with a reason, and its deletion leaves the other account's bucket alone", async () => {
    const ours = await s3.addAccount();
    const theirs = await s3.addAccount();
    const other = s3.client(theirs);
    await other.send(new CreateBucketCommand({ Bucket: 'drv-team-t1-taken' }));
    const driver = new S3BucketDriver({
      s3: { endpoint: s3.endpoint, region: s3.region, credentials: ours, forcePathStyle: true, bucketPrefix: 'drv' },
      logger: pino({ level: 'silent' }),
    });
    const resource: Managed<BucketSpec> = {
      id: 'bkt_taken',
      team: 'team_t1',
      generation: 1,
      desired: { name: 'taken', region: 'fra1', public: true },
      external: null,
      owner: null,
    };
    const step = await driver.create(resource);
    expect(step.external).toEqual({ bucket: 'drv-team-t1-taken', refused: 'the bucket name drv-team-t1-taken is taken on the S3 endpoint by another account' });
    const seen = await driver.observe({ ...resource, external: step.external });
    expect(seen).toMatchObject({ exists: true, ready: false, failure: step.external.refused });
    // Nothing here is ours to remove: the release forgets the name and the other bucket stays.
    const released = await driver.delete({ ...resource, external: step.external });
    expect(released.external).toEqual({});
    expect(await driver.observe({ ...resource, external: released.external })).toEqual({ exists: false });
    await other.send(new HeadBucketCommand({ Bucket: 'drv-team-t1-taken' }));
    // A refusal is an answer: the endpoint is fine.
    expect(driver.health().state).toBe('connected');
    other.destroy();
  });

  it('takes a bucket the same account made before (the status write lost in a crash) as its own', async () => {
    const ours = await s3.addAccount();
    const mine = s3.client(ours);
    await mine.send(new CreateBucketCommand({ Bucket: 'drv-team-t1-mine' }));
    const driver = new S3BucketDriver({
      s3: { endpoint: s3.endpoint, region: s3.region, credentials: ours, forcePathStyle: true, bucketPrefix: 'drv' },
      logger: pino({ level: 'silent' }),
    });
    const step = await driver.create({
      id: 'bkt_mine',
      team: 'team_t1',
      generation: 1,
      desired: { name: 'mine', region: 'fra1', public: false },
      external: null,
      owner: null,
    });
    expect(step.external).toEqual({ bucket: 'drv-team-t1-mine' });
    mine.destroy();
  });
});

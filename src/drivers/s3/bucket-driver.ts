/**
 * The bucket driver `s3`: each bucket is a bucket on one S3-compatible endpoint (AWS S3,
 * MinIO, Ceph RGW, SeaweedFS, Garage, versitygw), through the AWS SDK v3. It needs no
 * cluster, so either mode can use it.
 *
 * - create makes the bucket under its backend name (names.ts), fixed in status.external
 *   at the first create; a name already ours (BucketAlreadyOwnedByYou, after a crash
 *   between the call and the status write) is success, one another account owns is a
 *   failure with a reason;
 * - `public` is a bucket policy (policy.ts): observe reads it back and reports drift, which
 *   update repairs;
 * - delete empties the bucket (objects, unfinished multipart uploads), then deletes it;
 * - health is the outcome of its calls. When the endpoint stops answering, a probe looks
 *   for it every few seconds; once it answers, the outage's failures stop counting and
 *   every resource whose call failed meanwhile is looked at again at once (watchMade).
 */
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  GetBucketPolicyCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  AbortMultipartUploadCommand,
  BucketLocationConstraint,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import type { S3Config } from '../../config';
import type { BucketSpec } from '../../resources/storage';
import { OutcomeWindow } from '../health';
import type { BucketDriver, BucketOutputs } from '../storage';
import type { DriverHealth, ExternalRecord, Managed, Observation, Step } from '../types';
import { backendBucketName } from './names';
import { isPublicReadPolicy, publicReadPolicy } from './policy';

/** A call that gets no connection in this long counts as the endpoint not answering. */
const CONNECT_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** How often an unreachable endpoint is probed for its return. */
const PROBE_MS = 2_000;
/** Objects removed per DeleteObjects call (S3's limit). */
const DELETE_BATCH = 1000;

/** What the driver keeps of a bucket in status.external. */
interface BucketExternal extends ExternalRecord {
  /** The bucket's name on the endpoint, fixed at the first create. */
  bucket?: string;
  /** Why the endpoint refused to make it for us (another account owns the name). */
  refused?: string;
}

export interface S3BucketDriverOptions {
  s3: S3Config;
  logger: Logger;
}

/** A failed call: what it said, and whether the endpoint answered it at all. */
function describe(err: unknown): { message: string; reached: boolean } {
  if (err instanceof S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    return { message: `${err.name}${status ? ` (HTTP ${status})` : ''}: ${err.message}`, reached: status !== undefined };
  }
  return { message: err instanceof Error ? `${err.name}: ${err.message}` : String(err), reached: false };
}

/** An error the endpoint answered with this name or HTTP status (a HEAD's error has no body, so no name but "Unknown"). */
const answered = (err: unknown, expected: Array<string | number>) =>
  err instanceof Error && (expected.includes(err.name) || (err instanceof S3ServiceException && expected.includes(err.$metadata.httpStatusCode ?? -1)));

export class S3BucketDriver implements BucketDriver {
  private readonly client: S3Client;
  private readonly outcomes = new OutcomeWindow();
  /** The URL every bucket record shows as its endpoint. */
  readonly endpoint: string;
  private readonly logger: Logger;
  /** Resources whose calls failed while the endpoint did not answer: looked at again when it does. */
  private readonly stranded = new Map<string, { team: string; id: string }>();
  private changed: ((team: string, id: string) => void) | null = null;
  private probe: NodeJS.Timeout | null = null;

  constructor(private readonly options: S3BucketDriverOptions) {
    const { s3 } = options;
    this.logger = options.logger;
    this.endpoint = s3.endpoint ?? `https://s3.${s3.region}.amazonaws.com`;
    this.client = new S3Client({
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: s3.forcePathStyle,
      credentials: s3.credentials,
      // One retry: the reconciler retries with its own backoff, and health should see an outage soon.
      maxAttempts: 2,
      // Checksums only where S3 requires them: the SDK's newer default (CRC32 on every
      // upload-like call) is refused by several S3-compatible servers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
    });
  }

  async observe(resource: Managed<BucketSpec>): Promise<Observation<BucketOutputs, null>> {
    const external = this.externalOf(resource);
    if (external.refused) return { exists: true, upToDate: true, ready: false, outputs: null, observed: null, failure: external.refused };
    const bucket = external.bucket;
    if (!bucket) return { exists: false };
    const exists = await this.call(resource, () => this.client.send(new HeadBucketCommand({ Bucket: bucket })), 404);
    if (exists === null) return { exists: false };
    const policy = await this.call(resource, () => this.client.send(new GetBucketPolicyCommand({ Bucket: bucket })), 'NoSuchBucketPolicy', 'NoSuchBucket');
    const isPublic = policy?.Policy !== undefined && isPublicReadPolicy(policy.Policy, bucket);
    const hasPolicy = policy?.Policy !== undefined;
    const upToDate = resource.desired.public ? isPublic : !hasPolicy;
    return {
      exists: true,
      upToDate,
      ready: true,
      outputs: { endpoint: this.endpoint, s3_bucket: bucket, data_events: this.options.s3.notificationSecret !== undefined },
      observed: null,
      failure: null,
    };
  }

  async create(resource: Managed<BucketSpec>): Promise<Step> {
    const external = this.externalOf(resource);
    const bucket = external.bucket ?? backendBucketName(this.options.s3.bucketPrefix, resource.team, resource.desired.name);
    // us-east-1 is S3's default location and the one region it refuses to be named in.
    const region = this.options.s3.region;
    const location = region === 'us-east-1' ? undefined : { LocationConstraint: region as BucketLocationConstraint };
    const made = await this.call(
      resource,
      () => this.client.send(new CreateBucketCommand({ Bucket: bucket, CreateBucketConfiguration: location })),
      'BucketAlreadyOwnedByYou',
      'BucketAlreadyExists',
    );
    if (made === null) {
      // Either ours already (made before a crash lost the status write) or someone else's.
      const owned = await this.ownsBucket(resource, bucket);
      if (!owned) return { external: { bucket, refused: `the bucket name ${bucket} is taken on the S3 endpoint by another account` } };
    }
    await this.applyPolicy(resource, bucket);
    return { external: { bucket } };
  }

  async update(resource: Managed<BucketSpec>): Promise<Step> {
    const external = this.externalOf(resource);
    if (external.bucket) await this.applyPolicy(resource, external.bucket);
    return { external };
  }

  async delete(resource: Managed<BucketSpec>): Promise<Step> {
    const external = this.externalOf(resource);
    // A name another account owns was never ours: there is nothing to remove.
    if (external.refused || !external.bucket) return { external: {} };
    const bucket = external.bucket;
    await this.empty(resource, bucket);
    await this.call(resource, () => this.client.send(new DeleteBucketCommand({ Bucket: bucket })), 'NoSuchBucket');
    return { external };
  }

  /** Whether the bucket still holds objects, which deleting it would destroy. */
  async holdsData(resource: Pick<Managed<BucketSpec>, 'id' | 'team' | 'external'>): Promise<boolean> {
    const { bucket, refused } = this.externalOf(resource);
    if (!bucket || refused) return false;
    const listed = await this.call(resource, () => this.client.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1 })), 'NoSuchBucket');
    const uploads =
      listed && (await this.call(resource, () => this.client.send(new ListMultipartUploadsCommand({ Bucket: bucket, MaxUploads: 1 })), 'NoSuchBucket'));
    return (listed?.KeyCount ?? listed?.Contents?.length ?? 0) > 0 || (uploads?.Uploads?.length ?? 0) > 0;
  }

  health(): DriverHealth {
    return this.outcomes.health();
  }

  watchMade(changed: (team: string, id: string) => void): () => void {
    this.changed = changed;
    return () => {
      this.changed = null;
      this.stopProbe();
    };
  }

  private externalOf(resource: Pick<Managed<BucketSpec>, 'external'>): BucketExternal {
    return resource.external ?? {};
  }

  private async applyPolicy(resource: Managed<BucketSpec>, bucket: string): Promise<void> {
    if (resource.desired.public) {
      await this.call(resource, () => this.client.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: publicReadPolicy(bucket) })));
    } else {
      await this.call(resource, () => this.client.send(new DeleteBucketPolicyCommand({ Bucket: bucket })), 'NoSuchBucketPolicy');
    }
  }

  /** Whether a bucket the endpoint says exists is ours: a HeadBucket of another account's is refused. */
  private async ownsBucket(resource: Managed<BucketSpec>, bucket: string): Promise<boolean> {
    const head = await this.call(resource, () => this.client.send(new HeadBucketCommand({ Bucket: bucket })), 403, 404);
    return head !== null;
  }

  /** Removes every object and unfinished multipart upload, page by page. */
  private async empty(resource: Managed<BucketSpec>, bucket: string): Promise<void> {
    for (;;) {
      const page = await this.call(resource, () => this.client.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: DELETE_BATCH })), 'NoSuchBucket');
      const keys = (page?.Contents ?? []).flatMap((o) => (o.Key === undefined ? [] : [{ Key: o.Key }]));
      if (keys.length === 0) break;
      const result = await this.call(resource, () => this.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } })));
      const failed = result?.Errors ?? [];
      if (failed.length > 0)
        throw new Error(`the S3 endpoint did not delete ${failed.length} objects of ${bucket}: ${failed[0].Code ?? ''} ${failed[0].Message ?? ''}`.trim());
    }
    for (;;) {
      const page = await this.call(resource, () => this.client.send(new ListMultipartUploadsCommand({ Bucket: bucket })), 'NoSuchBucket');
      const uploads = page?.Uploads ?? [];
      if (uploads.length === 0) break;
      for (const upload of uploads) {
        await this.call(
          resource,
          () => this.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId })),
          'NoSuchUpload',
        );
      }
    }
  }

  /**
   * One call to the endpoint, its outcome counted in health. An error named in `expected`
   * (by its code or HTTP status) is an answer (the bucket does not exist, it has no policy): null. Any other is thrown
   * for the reconciler to retry, and remembered if the endpoint did not answer at all.
   */
  private async call<T>(resource: Pick<Managed<BucketSpec>, 'id' | 'team'>, send: () => Promise<T>, ...expected: Array<string | number>): Promise<T | null> {
    try {
      const answer = await send();
      this.outcomes.succeeded();
      return answer;
    } catch (err) {
      if (answered(err, expected)) {
        this.outcomes.succeeded();
        return null;
      }
      const { message, reached } = describe(err);
      this.outcomes.failed(message, reached);
      if (!reached) {
        this.stranded.set(`${resource.team}/${resource.id}`, { team: resource.team, id: resource.id });
        this.startProbe();
      }
      throw new Error(`S3 endpoint ${this.endpoint}: ${message}`);
    }
  }

  /** Looks for the endpoint's return while it does not answer; any answer, even a refusal, is a return. */
  private startProbe(): void {
    if (this.probe) return;
    this.logger.warn({ endpoint: this.endpoint }, 'the S3 endpoint does not answer; looking for its return every few seconds');
    this.probe = setInterval(() => void this.lookForEndpoint(), PROBE_MS);
    this.probe.unref();
  }

  private stopProbe(): void {
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
  }

  private async lookForEndpoint(): Promise<void> {
    try {
      await this.client.send(new ListBucketsCommand({ MaxBuckets: 1 }));
    } catch (err) {
      if (!describe(err).reached) return;
    }
    if (!this.probe) return;
    this.stopProbe();
    this.outcomes.recovered();
    const stranded = [...this.stranded.values()];
    this.stranded.clear();
    this.logger.info(
      { endpoint: this.endpoint, resources: stranded.length },
      'the S3 endpoint answers again; looking at the buckets whose calls failed meanwhile',
    );
    for (const { team, id } of stranded) this.changed?.(team, id);
  }
}

/** The connection and overload settings: defaults, and a malformed value names its variable. */
import { loadConfig } from '../../src/config';

describe('HTTP and overload settings', () => {
  it('has production defaults that bound every connection', () => {
    const { http, overload } = loadConfig({});
    expect(http).toEqual({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000, idleTimeoutMs: 120_000, maxConnections: 1000 });
    expect(overload).toEqual({ maxEventLoopDelayMs: 1000, maxHeapUsedPercent: 90, retryAfterSeconds: 5 });
  });

  it('keeps the headers timeout within a shorter request timeout unless told otherwise', () => {
    expect(loadConfig({ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '4000' }).http.headersTimeoutMs).toBe(4000);
  });

  it.each([
    [{ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '0' }, /CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/],
    [{ CLOUDPLANE_HTTP_MAX_CONNECTIONS: 'many' }, /CLOUDPLANE_HTTP_MAX_CONNECTIONS/],
    [{ CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '20000', CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '5000' }, /CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS \(20000\) must not be longer than CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/],
    [{ CLOUDPLANE_OVERLOAD_MAX_HEAP_USED_PERCENT: '150' }, /CLOUDPLANE_OVERLOAD_MAX_HEAP_USED_PERCENT/],
    [{ CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '-1' }, /CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('file share settings (cluster mode)', () => {
  const cluster = { CLOUDPLANE_STORE: 'kubernetes' };

  it('leaves the class to the cluster default unless one is named', () => {
    expect(loadConfig(cluster).kubernetes?.fileShareStorageClass).toBeUndefined();
    expect(loadConfig({ ...cluster, CLOUDPLANE_FILE_SHARE_STORAGE_CLASS: 'nfs-csi' }).kubernetes?.fileShareStorageClass).toBe('nfs-csi');
  });

  it.each(['NFS', 'nfs_csi', '-nfs', 'a'.repeat(254)])('refuses the class %s, naming the variable', (name) => {
    expect(() => loadConfig({ ...cluster, CLOUDPLANE_FILE_SHARE_STORAGE_CLASS: name })).toThrow(/CLOUDPLANE_FILE_SHARE_STORAGE_CLASS must be a Kubernetes object name/);
  });
});

describe('S3 settings of the bucket driver s3', () => {
  it('defaults to AWS in us-east-1, virtual-hosted, prefix cp, the SDK chain for credentials', () => {
    expect(loadConfig({}).s3).toEqual({ endpoint: undefined, region: 'us-east-1', credentials: undefined, forcePathStyle: false, bucketPrefix: 'cp' });
  });

  it('reads an endpoint with its credentials', () => {
    const env = {
      CLOUDPLANE_S3_ENDPOINT: 'http://127.0.0.1:7070',
      CLOUDPLANE_S3_REGION: 'eu-west-1',
      CLOUDPLANE_S3_ACCESS_KEY_ID: 'AKID',
      CLOUDPLANE_S3_SECRET_ACCESS_KEY: 'not-to-be-seen',
      CLOUDPLANE_S3_FORCE_PATH_STYLE: 'true',
      CLOUDPLANE_S3_BUCKET_PREFIX: 'prod-2',
    };
    expect(loadConfig(env).s3).toEqual({
      endpoint: 'http://127.0.0.1:7070',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'not-to-be-seen' },
      forcePathStyle: true,
      bucketPrefix: 'prod-2',
    });
  });

  it.each([
    [{ CLOUDPLANE_S3_ENDPOINT: 'minio:9000' }, /CLOUDPLANE_S3_ENDPOINT/],
    [{ CLOUDPLANE_S3_ENDPOINT: 'ftp://s3.example.com' }, /CLOUDPLANE_S3_ENDPOINT/],
    [{ CLOUDPLANE_S3_REGION: 'EU West' }, /CLOUDPLANE_S3_REGION/],
    [{ CLOUDPLANE_S3_FORCE_PATH_STYLE: 'yes' }, /CLOUDPLANE_S3_FORCE_PATH_STYLE/],
    [{ CLOUDPLANE_S3_BUCKET_PREFIX: 'Prod' }, /CLOUDPLANE_S3_BUCKET_PREFIX/],
    [{ CLOUDPLANE_S3_BUCKET_PREFIX: 'a-very-long-prefix-for-buckets' }, /CLOUDPLANE_S3_BUCKET_PREFIX/],
    [{ CLOUDPLANE_S3_ACCESS_KEY_ID: 'AKID' }, /CLOUDPLANE_S3_ACCESS_KEY_ID and CLOUDPLANE_S3_SECRET_ACCESS_KEY go together/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never puts the secret key in its message', () => {
    expect(() => loadConfig({ CLOUDPLANE_S3_SECRET_ACCESS_KEY: 'sekrit-value-123' })).toThrow(/only CLOUDPLANE_S3_SECRET_ACCESS_KEY is set/);
    expect(() => loadConfig({ CLOUDPLANE_S3_SECRET_ACCESS_KEY: 'sekrit-value-123' })).not.toThrow(/sekrit-value-123/);
  });
});

/** Settings: defaults, bounds, and a malformed value names its variable. */
import { loadConfig } from '../../src/config';

describe('HTTP and overload settings', () => {
  it('has production defaults that bound every connection', () => {
    const { http, overload } = loadConfig({});
    expect(http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
      idleTimeoutMs: 120_000,
      maxConnections: 1000,
      maxConnectionsPerAddress: 64,
      firstRequestTimeoutMs: 5_000,
    });
    expect(overload).toEqual({ maxEventLoopDelayMs: 1000, maxHeapUsedPercent: 90, retryAfterSeconds: 5 });
  });

  it('keeps the headers timeout within a shorter request timeout unless told otherwise', () => {
    expect(loadConfig({ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '4000' }).http.headersTimeoutMs).toBe(4000);
  });

  it('keeps the per-address cap and the first request timeout within smaller global settings unless told otherwise', () => {
    expect(loadConfig({ CLOUDPLANE_HTTP_MAX_CONNECTIONS: '10' }).http.maxConnectionsPerAddress).toBe(10);
    expect(loadConfig({ CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '2000' }).http.firstRequestTimeoutMs).toBe(2000);
    expect(loadConfig({ CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' }).http.maxConnectionsPerAddress).toBe(0);
  });

  it.each([
    [
      { CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '2000' },
      /CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS \(2000\) must not be above CLOUDPLANE_HTTP_MAX_CONNECTIONS \(1000\)/,
    ],
    [{ CLOUDPLANE_HTTP_FIRST_REQUEST_TIMEOUT_MS: '0' }, /CLOUDPLANE_HTTP_FIRST_REQUEST_TIMEOUT_MS/],
    [{ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '0' }, /CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/],
    [{ CLOUDPLANE_HTTP_MAX_CONNECTIONS: 'many' }, /CLOUDPLANE_HTTP_MAX_CONNECTIONS/],
    [
      { CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '20000', CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '5000' },
      /CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS \(20000\) must not be longer than CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/,
    ],
    [{ CLOUDPLANE_OVERLOAD_MAX_HEAP_USED_PERCENT: '150' }, /CLOUDPLANE_OVERLOAD_MAX_HEAP_USED_PERCENT/],
    [{ CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '-1' }, /CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('webhook in-flight caps', () => {
  it('defaults to 256 in all, 32 per team and 4 per subscription', () => {
    expect(loadConfig({}).webhooks.inFlight).toEqual({ global: 256, perTeam: 32, perSubscription: 4 });
    expect(loadConfig({}).webhooks.idleConnections).toEqual({ idle: 64, idlePerReceiver: 32 });
  });

  it('keeps a quarter of the in-flight cap of connections idle, or none', () => {
    expect(loadConfig({ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: '16' }).webhooks.idleConnections).toEqual({ idle: 4, idlePerReceiver: 4 });
    expect(loadConfig({ CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS: '0' }).webhooks.idleConnections).toEqual({ idle: 0, idlePerReceiver: 0 });
    expect(() => loadConfig({ CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS: '-1' })).toThrow(
      /CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS must be an integer between 0 and 100000/,
    );
  });

  it('keeps the defaults below a smaller cap above them', () => {
    expect(loadConfig({ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: '16' }).webhooks.inFlight).toEqual({ global: 16, perTeam: 16, perSubscription: 4 });
    expect(loadConfig({ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM: '2' }).webhooks.inFlight).toEqual({ global: 256, perTeam: 2, perSubscription: 2 });
  });

  it.each([
    [{ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: '0' }, /CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT must be an integer between 1 and 100000/],
    [
      { CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: '10', CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM: '32' },
      /CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM must be an integer between 1 and 10/,
    ],
    [{ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: '33' }, /CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION must be an integer between 1 and 32/],
    [{ CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: 'four' }, /CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION/],
  ])('refuses %j naming the variable and the bound', (env, message) => {
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
    expect(() => loadConfig({ ...cluster, CLOUDPLANE_FILE_SHARE_STORAGE_CLASS: name })).toThrow(
      /CLOUDPLANE_FILE_SHARE_STORAGE_CLASS must be a Kubernetes object name/,
    );
  });
});

describe("the binding of the operator's rights in team namespaces (cluster mode)", () => {
  const cluster = { CLOUDPLANE_STORE: 'kubernetes' };

  it('binds nothing unless told which ClusterRole to bind to which ServiceAccount', () => {
    expect(loadConfig(cluster).kubernetes?.teamNamespaceBinding).toBeUndefined();
    expect(
      loadConfig({ ...cluster, CLOUDPLANE_TEAM_NAMESPACE_ROLE: 'cp-cloudplane-team-namespace', CLOUDPLANE_SERVICE_ACCOUNT_NAME: 'cp-cloudplane' }).kubernetes
        ?.teamNamespaceBinding,
    ).toEqual({
      clusterRole: 'cp-cloudplane-team-namespace',
      serviceAccount: 'cp-cloudplane',
    });
  });

  it('refuses one without the other', () => {
    expect(() => loadConfig({ ...cluster, CLOUDPLANE_TEAM_NAMESPACE_ROLE: 'cp-cloudplane-team-namespace' })).toThrow(/go together/);
    expect(() => loadConfig({ ...cluster, CLOUDPLANE_SERVICE_ACCOUNT_NAME: 'cp-cloudplane' })).toThrow(/go together/);
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
    [{ CLOUDPLANE_S3_NOTIFICATION_SECRET: 'short-secret' }, /CLOUDPLANE_S3_NOTIFICATION_SECRET must be at least 32/],
    [{ CLOUDPLANE_S3_NOTIFICATION_SECRET: `${'a'.repeat(32)}@host` }, /CLOUDPLANE_S3_NOTIFICATION_SECRET/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never puts the secret key in its message', () => {
    expect(() => loadConfig({ CLOUDPLANE_S3_SECRET_ACCESS_KEY: 'sekrit-value-123' })).toThrow(/only CLOUDPLANE_S3_SECRET_ACCESS_KEY is set/);
    expect(() => loadConfig({ CLOUDPLANE_S3_SECRET_ACCESS_KEY: 'sekrit-value-123' })).not.toThrow(/sekrit-value-123/);
    expect(() => loadConfig({ CLOUDPLANE_S3_NOTIFICATION_SECRET: 'sekrit:value-123' })).not.toThrow(/sekrit/);
    const secret = 'A-notification_secret.of~32-chars';
    expect(loadConfig({ CLOUDPLANE_S3_NOTIFICATION_SECRET: secret }).s3.notificationSecret).toBe(secret);
  });
});

describe('sign-in settings: sessions, public URL, identity provider', () => {
  it('defaults to 2 h idle and 24 h sessions, the listen address and API-key sign-in', () => {
    const config = loadConfig({});
    expect(config.sessions).toEqual({ idleTimeoutMs: 2 * 3600_000, maxAgeMs: 24 * 3600_000 });
    expect(config.publicUrl).toBeUndefined();
    expect(config.oidc).toBeUndefined();
  });

  it('reads durations in seconds or with a unit, and a provider given in full', () => {
    const config = loadConfig({
      CLOUDPLANE_SESSION_IDLE_TIMEOUT: '90m',
      CLOUDPLANE_SESSION_MAX_AGE: '30',
      CLOUDPLANE_PUBLIC_URL: 'https://cloudplane.example.com/',
      CLOUDPLANE_OIDC_ISSUER: 'https://id.example.com/realms/main',
      CLOUDPLANE_OIDC_CLIENT_ID: 'cloudplane',
      CLOUDPLANE_OIDC_CLIENT_SECRET: 'oidc-client-secret-value',
    });
    expect(config.sessions).toEqual({ idleTimeoutMs: 90 * 60_000, maxAgeMs: 30_000 });
    expect(config.publicUrl).toBe('https://cloudplane.example.com');
    expect(config.oidc).toEqual({ issuer: 'https://id.example.com/realms/main', clientId: 'cloudplane', clientSecret: 'oidc-client-secret-value' });
  });

  it.each([
    [{ CLOUDPLANE_SESSION_IDLE_TIMEOUT: '2 hours' }, /CLOUDPLANE_SESSION_IDLE_TIMEOUT/],
    [{ CLOUDPLANE_SESSION_MAX_AGE: '0' }, /CLOUDPLANE_SESSION_MAX_AGE/],
    [{ CLOUDPLANE_PUBLIC_URL: 'cloudplane.example.com' }, /CLOUDPLANE_PUBLIC_URL/],
    [{ CLOUDPLANE_PUBLIC_URL: 'https://cloudplane.example.com/console' }, /CLOUDPLANE_PUBLIC_URL must be an origin/],
    [
      { CLOUDPLANE_OIDC_ISSUER: 'http://id.example.com', CLOUDPLANE_OIDC_CLIENT_ID: 'c', CLOUDPLANE_OIDC_CLIENT_SECRET: 's' },
      /CLOUDPLANE_OIDC_ISSUER must be an https:\/\//,
    ],
    [{ CLOUDPLANE_OIDC_ISSUER: 'https://id.example.com' }, /CLOUDPLANE_OIDC_CLIENT_ID and CLOUDPLANE_OIDC_CLIENT_SECRET not set/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never puts the client secret in its message', () => {
    expect(() => loadConfig({ CLOUDPLANE_OIDC_CLIENT_SECRET: 'do-not-print-me' })).toThrow(/CLOUDPLANE_OIDC_ISSUER and CLOUDPLANE_OIDC_CLIENT_ID not set/);
    expect(() => loadConfig({ CLOUDPLANE_OIDC_CLIENT_SECRET: 'do-not-print-me' })).not.toThrow(/do-not-print-me/);
  });
});

describe('heap growth', () => {
  it('lets the heap grow half past what is live by default, V8 choose at 0, and refuses past 300 %', () => {
    expect(loadConfig({}).heapGrowingPercent).toBe(50);
    expect(loadConfig({ CLOUDPLANE_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(() => loadConfig({ CLOUDPLANE_HEAP_GROWING_PERCENT: '301' })).toThrow(
      'CLOUDPLANE_HEAP_GROWING_PERCENT must be an integer between 0 and 300, got "301"',
    );
  });
});

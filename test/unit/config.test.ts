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

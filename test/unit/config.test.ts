/** The connection settings: defaults, and a malformed value names its variable. */
import { loadConfig } from '../../src/config';

describe('HTTP settings', () => {
  it('has production defaults that bound every connection', () => {
    const { http } = loadConfig({});
    expect(http).toEqual({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000, idleTimeoutMs: 120_000, maxConnections: 1000 });
  });

  it('keeps the headers timeout within a shorter request timeout unless told otherwise', () => {
    expect(loadConfig({ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '4000' }).http.headersTimeoutMs).toBe(4000);
  });

  it.each([
    [{ CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '0' }, /CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/],
    [{ CLOUDPLANE_HTTP_MAX_CONNECTIONS: 'many' }, /CLOUDPLANE_HTTP_MAX_CONNECTIONS/],
    [{ CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '20000', CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: '5000' }, /CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS \(20000\) must not be longer than CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS/],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

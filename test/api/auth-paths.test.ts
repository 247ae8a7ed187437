/**
 * Authentication cannot be stepped around by spelling a path differently. Every operation
 * of the served OpenAPI document is requested without a key in percent-encoded,
 * double-slashed, dot-segment, encoded-slash, trailing-slash and case-changed forms: each
 * answers 401 in the envelope (the router decodes `%61pi` to `api`, so a check of the raw
 * URL once let `GET /%61pi/v1/regions` through with data, and answered 500 elsewhere).
 * With a valid key the same forms answer whatever they deserve, never 500.
 */
import { rawRequest, RawResponse } from '../helpers/raw-http';
import { startTestService, TestService } from '../helpers/service';

const PLACEHOLDER_ID = 'x_0000000000000000';
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

const hex = (char: string) => `%${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
/** The first letter of a segment percent-encoded (`api` -> `%61pi`), upper-case hex for variety. */
const encodeFirst = (segment: string, upper = false) => {
  const encoded = hex(segment[0]);
  return (upper ? encoded.toUpperCase() : encoded) + segment.slice(1);
};
const encodeAll = (segment: string) => [...segment].map(hex).join('');

/** Spellings of `path` that a decoding or normalising router might take for the real one. */
export function pathVariants(path: string): Record<string, string> {
  const segments = path.split('/').filter(Boolean);
  const join = (parts: string[]) => `/${parts.join('/')}`;
  const [first, second, ...rest] = segments;
  return {
    'first segment encoded': join([encodeFirst(first), second, ...rest]),
    'a letter of each segment encoded': join(segments.map((s, i) => encodeFirst(s, i % 2 === 1))),
    'every character encoded': join(segments.map(encodeAll)),
    'leading double slash': `/${path}`,
    'double slash after api': join([first, `/${second}`, ...rest]),
    'double slash before the last segment': `${join(segments.slice(0, -1))}//${segments[segments.length - 1]}`,
    'trailing slash': `${path}/`,
    'dot-dot segment': join([first, second, 'x', '..', ...rest]),
    'dot segment': join([first, '.', second, ...rest]),
    'encoded dot-dot segment': join([first, second, 'x', '%2e%2e', ...rest]),
    'encoded slash': `/${first}%2F${second}/${rest.join('/')}`,
    'upper case': path.toUpperCase(),
    'upper-case API': join([first.toUpperCase(), second, ...rest]),
    'capitalised resource': join([first, second.toUpperCase(), ...rest.map((s) => s[0].toUpperCase() + s.slice(1))]),
  };
}

interface Probe {
  operation: string;
  form: string;
  method: string;
  path: string;
}

describe('authentication by construction: every operation, every spelling', () => {
  let t: TestService;
  let probes: Probe[];

  beforeAll(async () => {
    // Thousands of requests from one address: the rate limit is not what this test looks at.
    t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000' });
    const document = (await rawRequest(t.url, 'GET', '/api/v1/openapi.json')).body;
    probes = [];
    for (const [template, item] of Object.entries<Record<string, unknown>>(document.paths)) {
      const path = template.replace(/\{[^}]+\}/g, PLACEHOLDER_ID);
      for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
        for (const [form, variant] of Object.entries({ canonical: path, ...pathVariants(path) })) {
          probes.push({ operation: `${method} ${template}`, form, method, path: variant });
        }
      }
    }
  });
  afterAll(async () => t.stop());

  const send = (probe: Probe, key: string | null): Promise<RawResponse> => {
    const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    if (!BODY_METHODS.has(probe.method)) return rawRequest(t.url, probe.method, probe.path, { headers });
    return rawRequest(t.url, probe.method, probe.path, { headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
  };

  it('walks a document with every family in it', () => {
    const operations = new Set(probes.map((p) => p.operation));
    expect(operations.size).toBeGreaterThan(50);
    for (const expected of [
      'GET /api/v1/regions',
      'POST /api/v1/servers/{id}/stop',
      'DELETE /api/v1/settings/api-keys/{id}',
      'GET /api/v1/webhooks/{id}/deliveries',
    ]) {
      expect(operations).toContain(expected);
    }
  });

  it('answers 401 in the envelope, with WWW-Authenticate, to every form without a key', async () => {
    const wrong: string[] = [];
    for (const probe of probes) {
      const res = await send(probe, null);
      const envelope = res.body?.error?.code === 'unauthorized' && typeof res.body?.meta?.persistence === 'string';
      if (res.status !== 401 || !envelope || !/^Bearer\b/.test(String(res.headers['www-authenticate']))) {
        wrong.push(`${probe.operation} [${probe.form}] ${probe.method} ${probe.path} -> ${res.status} ${res.body?.error?.code ?? ''}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('never answers 500 to any form with a valid key, and always in the envelope', async () => {
    const wrong: string[] = [];
    for (const probe of probes) {
      const res = await send(probe, t.key);
      const envelope = res.status === 204 || (res.body && typeof res.body === 'object' && ('data' in res.body || 'error' in res.body));
      if (res.status >= 500 || !envelope) wrong.push(`${probe.operation} [${probe.form}] ${probe.method} ${probe.path} -> ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('answers an unknown path 401 without a key and 404 with one; a known path under another method 405 with one', async () => {
    for (const path of ['/api/v1/no-such-family', '/api/v2/servers', '/nowhere', '/API/V1/REGIONS/x']) {
      expect((await rawRequest(t.url, 'GET', path)).status).toBe(401);
      const known = await rawRequest(t.url, 'GET', path, { headers: { authorization: `Bearer ${t.key}` } });
      expect({ path, status: known.status, code: known.body.error.code }).toEqual({ path, status: 404, code: 'route_not_found' });
    }
    expect((await rawRequest(t.url, 'PUT', '/api/v1/regions')).status).toBe(401);
    const put = await rawRequest(t.url, 'PUT', '/api/v1/regions', { headers: { authorization: `Bearer ${t.key}` } });
    expect({ status: put.status, code: put.body.error.code, allow: put.headers.allow }).toEqual({
      status: 405,
      code: 'method_not_allowed',
      allow: 'GET, HEAD',
    });
  });

  it('serves the public endpoints without a key, and nothing else under their names', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json']) {
      expect({ path, status: (await rawRequest(t.url, 'GET', path)).status }).toEqual({ path, status: 200 });
    }
    for (const path of ['/api/v1/openapi.json/../regions', '/healthz/../api/v1/regions', '/%68ealthz/../api/v1/regions']) {
      expect({ path, status: (await rawRequest(t.url, 'GET', path)).status }).toEqual({ path, status: 401 });
    }
  });
});

/**
 * Every error row of docs/api.md "Status codes and errors" that load balancers can hit,
 * against the real service: status, error.code, and the {error, meta} envelope.
 */
import { ApiResponse, request, startTestService, TestService, waitForStatus } from '../helpers/service';
import { ConflictError } from '../../src/store/types';

const LBS = '/api/v1/load-balancers';

/** The docs/api.md envelope of an error: code and message, persistence and provider in meta. */
function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.data).toBeUndefined();
  expect(['synced', 'stale', 'unavailable']).toContain(res.body.meta.persistence);
  expect(['connected', 'degraded', 'unavailable']).toContain(res.body.meta.provider);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
}

const fieldsOf = (res: ApiResponse): string[] => res.body.error.details.map((d: { field: string }) => d.field).sort();

describe('API errors (load balancers)', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_REGIONS_UNAVAILABLE: 'sgp1' });
  });
  afterAll(async () => t.stop());

  describe('bodies', () => {
    it('answers 400 invalid_json to a broken JSON body', async () => {
      const res = await t.api('POST', LBS, undefined, { rawBody: '{"name": "web", "region": ', headers: { 'content-type': 'application/json' } });
      expectError(res, 400, 'invalid_json');
    });

    it.each(['application/x-www-form-urlencoded', 'text/html', 'text/plain'])('answers 415 unsupported_media_type to a %s body', async (contentType) => {
      const res = await t.api('POST', LBS, undefined, { rawBody: 'name=web&region=fra1', headers: { 'content-type': contentType } });
      expectError(res, 415, 'unsupported_media_type');
    });
  });

  describe('credentials', () => {
    const refusals: Array<[string, Record<string, string>]> = [
      ['no Authorization header', {}],
      ['a malformed Authorization header', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ['an unknown key', { authorization: `Bearer cpk_${'A1b2C3d4'.repeat(5)}` }],
    ];
    it.each(refusals)('answers 401 unauthorized with WWW-Authenticate: Bearer for %s', async (_what, headers) => {
      const res = await t.api('GET', LBS, undefined, { key: null, headers });
      expectError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    });
  });

  // Found by schemathesis (make fuzz): the router answered these itself, outside the envelope
  // (414 FST_ERR_MAX_PARAM_LENGTH, 400 FST_ERR_BAD_URL), with no request id.
  describe('URLs', () => {
    it('answers 422 validation_failed naming id for an id longer than any id, not 414', async () => {
      const res = await t.api('GET', `${LBS}/${'x'.repeat(300)}`);
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['id']);
    });

    it('answers 400 bad_request in the envelope, with a request id, for a path that is not valid percent-encoding', async () => {
      const res = await t.api('GET', `${LBS}/%E0%A4%A`);
      expectError(res, 400, 'bad_request');
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    });
  });

  describe('missing things', () => {
    it('answers 404 load_balancer_not_found for an unknown id, on every verb', async () => {
      const id = 'lb_0000000000000000';
      expectError(await t.api('GET', `${LBS}/${id}`), 404, 'load_balancer_not_found');
      expectError(await t.api('PATCH', `${LBS}/${id}`, { algorithm: 'ip_hash' }), 404, 'load_balancer_not_found');
      expectError(await t.api('DELETE', `${LBS}/${id}`), 404, 'load_balancer_not_found');
      expectError(await t.api('POST', `${LBS}/${id}/detach`, { server_id: 'svr_0000000000000000' }), 404, 'load_balancer_not_found');
    });

    it('answers 404 backend_not_found when detaching a server that is not attached', async () => {
      const lb = (await t.api('POST', LBS, { name: 'detach-me', region: 'fra1' })).body.data;
      const res = await t.api('POST', `${LBS}/${lb.id}/detach`, { server_id: 'svr_0000000000000000' });
      expectError(res, 404, 'backend_not_found');
    });

    it('answers an unknown route under /api/v1 with a JSON 404 envelope', async () => {
      const res = await t.api('GET', '/api/v1/no-such-family');
      expectError(res, 404, 'route_not_found');
    });

    it('answers a known path under a method it does not take with 405 and Allow', async () => {
      const lb = (await t.api('POST', LBS, { name: 'method-me', region: 'fra1' })).body.data;
      const put = await t.api('PUT', `${LBS}/${lb.id}`, { name: 'x' });
      expectError(put, 405, 'method_not_allowed');
      expect(put.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
      const list = await t.api('DELETE', LBS);
      expectError(list, 405, 'method_not_allowed');
      expect(list.headers.get('allow')).toBe('GET, HEAD, POST');
      const action = await t.api('GET', `/api/v1/servers/svr_0000000000000000/reboot`);
      expectError(action, 405, 'method_not_allowed');
      expect(action.headers.get('allow')).toBe('POST');
    });

    it('serves a path with a trailing slash as the path without it (it answered 405 "answers GET, not GET")', async () => {
      const res = await t.api('GET', '/api/v1/regions/');
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
    });
  });

  describe('schema violations', () => {
    it('refuses text that is not valid Unicode (a lone surrogate) with 422, naming the field, and keeps pairs', async () => {
      const json = (name: string, extra = '') => ({ rawBody: `{"name":"${name}","region":"fra1"${extra}}`, headers: { 'content-type': 'application/json' } });
      const lone = await t.api('POST', LBS, undefined, json('web\\ud800'));
      expectError(lone, 422, 'validation_failed');
      expect(fieldsOf(lone)).toEqual(['name']);
      expect(fieldsOf(await t.api('POST', LBS, undefined, json('web', ',"\\udc00":1')))).toEqual(['body']);
      // An escaped surrogate pair is a real character (U+1F600) and stored as sent.
      const paired = await t.api('POST', LBS, undefined, json('web \\ud83d\\ude00'));
      expect(paired.status).toBe(201);
      expect(paired.body.data.name).toBe('web \u{1F600}');
    });

    // The lone-surrogate scan once recursed, so 10,000 levels overflowed the stack and the
    // body was called invalid JSON; it is valid JSON that breaks the schema.
    // Sent to the jobs route, which takes the largest bodies (64 KiB, api/body-limits.ts):
    // 10,000 levels do not fit in the 16 KiB of a load balancer's route, which answers 413.
    describe('JSON nested 10,000 deep', () => {
      const DEPTH = 10_000;
      const JOBS = '/api/v1/jobs';
      const deepArray = (inner: string, depth = DEPTH) => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
      const deepObject = (inner: string) => `${'{"a":'.repeat(DEPTH)}${inner}${'}'.repeat(DEPTH)}`;
      const raw = (rawBody: string) => ({ rawBody, headers: { 'content-type': 'application/json' } });

      it.each([
        ['a name that is a deep array', `{"name":${deepArray('"x"')},"command":"true"}`, ['name']],
        // A field names the first 16 levels of its path, not all 10,000.
        ['a name that is a deep array holding a lone surrogate', `{"name":${deepArray('"\\ud800"')},"command":"true"}`, [`name${'[0]'.repeat(15)}`]],
        ['an unknown field holding a deep object', `{"name":"deep","command":"true","extra":${deepObject('1')}}`, ['extra']],
        ['a body that is a deep array', deepArray('1'), ['body']],
      ])('answers 422 validation_failed to %s', async (_what, body, fields) => {
        const res = await t.api('POST', JOBS, undefined, raw(body));
        expectError(res, 422, 'validation_failed');
        expect(fieldsOf(res)).toEqual(fields);
      });

      it('answers 422 naming the filter of a webhook whose filter value is a deep array', async () => {
        // 7,000 levels: as deep as the webhook route's 16 KiB holds.
        const res = await t.api(
          'POST',
          '/api/v1/webhooks',
          undefined,
          raw(`{"url":"https://example.com/hook","events":["server.*"],"filter":{"server.region":${deepArray('"fra1"', 7_000)}}}`),
        );
        expectError(res, 422, 'validation_failed');
        expect(fieldsOf(res)[0]).toMatch(/^filter/);
      });
    });

    it('names every offending field at once: missing name and an out-of-range port', async () => {
      const res = await t.api('POST', LBS, { region: 'fra1', port: 70000 });
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['name', 'port']);
      for (const detail of res.body.error.details) expect(detail.message).toEqual(expect.any(String));
    });

    it('names a wrongly typed field alongside a missing one', async () => {
      const res = await t.api('POST', LBS, { name: 'typed', sticky_sessions: 'yes' });
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['region', 'sticky_sessions']);
    });

    it('refuses an unknown field on create', async () => {
      const res = await t.api('POST', LBS, { name: 'web', region: 'fra1', colour: 'blue' });
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['colour']);
    });

    it('refuses a field that cannot be updated (region) in PATCH', async () => {
      const lb = (await t.api('POST', LBS, { name: 'patch-me', region: 'fra1' })).body.data;
      const res = await t.api('PATCH', `${LBS}/${lb.id}`, { region: 'ams3', port: 0 });
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual(['port', 'region']);
      const after = await t.api('GET', `${LBS}/${lb.id}`);
      expect(after.body.data.region).toBe('fra1');
    });
  });

  describe('domain rules', () => {
    it.each([
      ['http', 443],
      ['https', 80],
    ])('answers 422 invalid_protocol_port for %s on %i', async (protocol, port) => {
      const res = await t.api('POST', LBS, { name: 'bad-pair', region: 'fra1', protocol, port, ssl_certificate_id: 'cert-1' });
      expectError(res, 422, 'invalid_protocol_port');
    });

    it('answers 422 naming ssl_certificate_id when it cannot name a TLS Secret', async () => {
      for (const name of ['Web_TLS', '-tls', 'tls.', 'x'.repeat(254)]) {
        const res = await t.api('POST', LBS, { name: 'bad-cert', region: 'fra1', protocol: 'https', ssl_certificate_id: name });
        expectError(res, 422, 'validation_failed');
        expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['ssl_certificate_id']);
      }
      expect((await t.api('POST', LBS, { name: 'good-cert', region: 'fra1', protocol: 'https', ssl_certificate_id: 'web.example-tls' })).status).toBe(201);
    });

    it('answers 422 invalid_protocol_port when a PATCH makes the pair invalid', async () => {
      const lb = (await t.api('POST', LBS, { name: 'pair', region: 'fra1' })).body.data;
      expectError(await t.api('PATCH', `${LBS}/${lb.id}`, { port: 443 }), 422, 'invalid_protocol_port');
    });

    it('answers 422 region_unavailable for a region not in the catalog, or marked unavailable', async () => {
      expectError(await t.api('POST', LBS, { name: 'nowhere', region: 'mars1' }), 422, 'region_unavailable');
      expectError(await t.api('POST', LBS, { name: 'closed', region: 'sgp1' }), 422, 'region_unavailable');
    });
  });

  describe('list parameters', () => {
    let cursor: string;
    beforeAll(async () => {
      for (const name of ['page-a', 'page-b', 'page-c']) await t.api('POST', LBS, { name, region: 'ams3' });
      const first = await t.api('GET', `${LBS}?limit=1&sort=created_at&order=desc`);
      cursor = first.body.meta.next_cursor;
      expect(cursor).toEqual(expect.any(String));
    });

    it('accepts its own cursor', async () => {
      const next = await t.api('GET', `${LBS}?limit=1&sort=created_at&order=desc&cursor=${encodeURIComponent(cursor)}`);
      expect(next.status).toBe(200);
      expect(next.body.data).toHaveLength(1);
    });

    it('answers 422 invalid_cursor to a tampered cursor', async () => {
      const flip = (c: string) => (c === 'A' ? 'B' : 'A');
      const tampered = [
        `${flip(cursor[0])}${cursor.slice(1)}`,
        `${cursor.slice(0, -1)}${flip(cursor[cursor.length - 1])}`,
        cursor.split('.')[0],
        'not-a-cursor',
      ];
      for (const bad of tampered) {
        const res = await t.api('GET', `${LBS}?limit=1&sort=created_at&order=desc&cursor=${encodeURIComponent(bad)}`);
        expectError(res, 422, 'invalid_cursor');
      }
    });

    it('answers 422 invalid_cursor to a cursor of another sort, order or filter', async () => {
      for (const query of ['sort=name&order=desc', 'sort=created_at&order=asc', 'sort=created_at&order=desc&status=running']) {
        const res = await t.api('GET', `${LBS}?limit=1&${query}&cursor=${encodeURIComponent(cursor)}`);
        expectError(res, 422, 'invalid_cursor');
      }
    });

    it.each(['limit=0', 'limit=101', 'limit=ten', 'sort=size', 'order=up', 'status=sleeping'])('answers 422 to %s', async (query) => {
      const res = await t.api('GET', `${LBS}?${query}`);
      expectError(res, 422, 'validation_failed');
      expect(fieldsOf(res)).toEqual([query.split('=')[0]]);
    });
  });

  describe('request ids', () => {
    it('echoes the X-Request-Id the client sent, on success and on error', async () => {
      const ok = await t.api('GET', LBS, undefined, { headers: { 'x-request-id': 'client-abc.123' } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('client-abc.123');
      const refused = await request(t.url, 'GET', LBS, undefined, { headers: { 'x-request-id': 'client-def-456' } });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('x-request-id')).toBe('client-def-456');
    });

    it('generates a distinct X-Request-Id when none was sent', async () => {
      const a = (await t.api('GET', LBS)).headers.get('x-request-id');
      const b = (await t.api('GET', `${LBS}/lb_0000000000000000`)).headers.get('x-request-id');
      expect(a).toMatch(/^\S{8,}$/);
      expect(b).toMatch(/^\S{8,}$/);
      expect(a).not.toBe(b);
    });
  });

  describe('concurrent writers', () => {
    it('answers 409 resource_busy, not 500, when other writers win every retry, and changes nothing', async () => {
      const lb = (await t.api('POST', LBS, { name: 'contended', region: 'fra1' })).body.data;
      await waitForStatus(t, `${LBS}/${lb.id}`, 'running');
      // Fault injection on the real store: every write of this one by the API (a DELETE
      // first labels it with the caller) loses its race.
      const store = t.service.ctx.store;
      const real = store.update.bind(store);
      store.update = async (object) => {
        if (object.meta.id !== lb.id) return real(object);
        throw new ConflictError(object.meta.kind, object.meta.id);
      };
      try {
        expectError(await t.api('DELETE', `${LBS}/${lb.id}`), 409, 'resource_busy');
      } finally {
        store.update = real;
      }
      expect((await t.api('GET', `${LBS}/${lb.id}`)).body.data.status).toBe('running');
    });
  });
});

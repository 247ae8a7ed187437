/**
 * List cursors and integer query parameters as an attacker sends them. A cursor is bound to
 * the list that handed it out (route, parent, team), its sort, order and every filter;
 * anything else, and anything that is not byte for byte a cursor the service signed, is 422
 * invalid_cursor, never a 500. Integers in query strings are decimal digits only, on every
 * endpoint that takes one.
 */
import { ApiResponse, eventually, startTestService, TestService } from '../helpers/service';

const LBS = '/api/v1/load-balancers';

function expectInvalidCursor(res: ApiResponse, what: string): void {
  expect({ what, status: res.status, code: res.body?.error?.code }).toEqual({ what, status: 422, code: 'invalid_cursor' });
}

const withCursor = (path: string, cursor: string) => `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`;

describe('cursors', () => {
  let t: TestService;
  /** A cursor of the load balancer list, default sort and order, limit 1. */
  let lbCursor: string;

  beforeAll(async () => {
    t = await startTestService();
    for (const name of ['cur-a', 'cur-b', 'cur-c']) expect((await t.api('POST', LBS, { name, region: 'fra1' })).status).toBe(201);
    for (const name of ['svr-a', 'svr-b', 'svr-c']) expect((await t.api('POST', '/api/v1/servers', { name, region: 'fra1' })).status).toBe(201);
    lbCursor = (await t.api('GET', `${LBS}?limit=1`)).body.meta.next_cursor;
    expect(lbCursor).toEqual(expect.any(String));
  });
  afterAll(async () => t.stop());

  it('accepts its own cursor, also with another limit', async () => {
    for (const limit of [1, 2]) {
      const next = await t.api('GET', withCursor(`${LBS}?limit=${limit}`, lbCursor));
      expect(next.status).toBe(200);
      expect(next.body.data).toHaveLength(limit);
    }
  });

  it('answers 422, not 500, to a signature with multibyte characters of the right length in characters', async () => {
    const [body, signature] = lbCursor.split('.');
    for (const forged of ['é'.repeat(signature.length), `ü${signature.slice(1)}`, `${signature.slice(0, -1)}€`, '😀'.repeat(signature.length / 2)]) {
      expectInvalidCursor(await t.api('GET', withCursor(`${LBS}?limit=1`, `${body}.${forged}`)), forged);
    }
  });

  it('answers 422 to a valid cursor with anything appended or prepended', async () => {
    for (const forged of [`${lbCursor}.x`, `${lbCursor}.`, `${lbCursor}x`, `x${lbCursor}`, `.${lbCursor}`, `${lbCursor} `, `${lbCursor}=`]) {
      expectInvalidCursor(await t.api('GET', withCursor(`${LBS}?limit=1`, forged)), forged);
    }
  });

  it("answers 422 to one list's cursor on every other list", async () => {
    for (const other of [
      '/api/v1/servers',
      '/api/v1/vpn-gateways',
      '/api/v1/object-storage',
      '/api/v1/jobs',
      '/api/v1/settings/api-keys',
      '/api/v1/agent/threads',
      '/api/v1/webhooks',
      '/api/v1/audit-log',
    ]) {
      expectInvalidCursor(await t.api('GET', withCursor(`${other}?limit=1`, lbCursor)), other);
    }
  });

  it('answers 422 to a cursor used with another sort, order, status or filter', async () => {
    for (const query of ['sort=name', 'order=asc', 'status=creating', 'sort=created_at&order=asc']) {
      expectInvalidCursor(await t.api('GET', withCursor(`${LBS}?limit=1&${query}`, lbCursor)), query);
    }
    // The audit log takes the events in as they are published: a second page once two are in.
    const audit: string = await eventually(
      async () => (await t.api('GET', '/api/v1/audit-log?limit=1&type=load_balancer.*')).body.meta.next_cursor,
      30_000,
      200,
    );
    expect((await t.api('GET', withCursor('/api/v1/audit-log?limit=1&type=load_balancer.*', audit))).status).toBe(200);
    expectInvalidCursor(await t.api('GET', withCursor('/api/v1/audit-log?limit=1&type=server.*', audit)), 'audit type');
    expectInvalidCursor(await t.api('GET', withCursor('/api/v1/audit-log?limit=1&type=load_balancer.*&q=cur', audit)), 'audit q');
  });

  it("answers 422 to one thread's message cursor on another thread's messages", async () => {
    const threads: string[] = [];
    for (const title of ['first', 'second']) {
      const thread = (await t.api('POST', '/api/v1/agent/threads', { title })).body.data.id;
      expect((await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content: 'How many load balancers do I have?' })).status).toBe(201);
      threads.push(thread);
    }
    const cursor = (await t.api('GET', `/api/v1/agent/threads/${threads[0]}/messages?limit=1`)).body.meta.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    expect((await t.api('GET', withCursor(`/api/v1/agent/threads/${threads[0]}/messages?limit=1`, cursor))).status).toBe(200);
    expectInvalidCursor(await t.api('GET', withCursor(`/api/v1/agent/threads/${threads[1]}/messages?limit=1`, cursor)), 'other thread');
  });

  it('answers 422, never 500, to cursors that are not cursors', async () => {
    const [body, signature] = lbCursor.split('.');
    const junk = [
      '',
      '.',
      '..',
      'a.b',
      `${body}.`,
      `.${signature}`,
      `${body}.${signature}.${signature}`,
      '%',
      '\u0000',
      'null.null',
      `${Buffer.from('[]').toString('base64url')}.${signature}`,
      'x'.repeat(1024),
    ];
    for (const cursor of junk) {
      const res = await t.api('GET', withCursor(`${LBS}?limit=1`, cursor));
      expect({ cursor, status: res.status }).toEqual({ cursor, status: 422 });
    }
  });
});

describe('integers in query strings', () => {
  let t: TestService;
  let document: any;
  beforeAll(async () => {
    t = await startTestService();
    document = (await t.api('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
  });
  afterAll(async () => t.stop());

  /** Every GET of the served document with an integer query parameter, and that parameter. */
  const integerQueries = (): Array<{ path: string; name: string }> => {
    const found: Array<{ path: string; name: string }> = [];
    for (const [template, item] of Object.entries<any>(document.paths)) {
      for (const parameter of item.get?.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema?.type === 'integer')
          found.push({ path: template.replace(/\{[^}]+\}/g, 'x_0000000000000000'), name: parameter.name });
      }
    }
    return found;
  };

  it('finds limit on every list', () => {
    const lists = integerQueries();
    expect(lists.length).toBeGreaterThanOrEqual(10);
    expect(lists).toContainEqual({ path: '/api/v1/audit-log', name: 'limit' });
  });

  it.each(['0x10', '1e2', '%2B5', '%205', '5%20', '5.0', '1_0', '0b11', 'Infinity', '%EF%BC%95'])(
    'answers 422 validation_failed naming the parameter to %s, on every endpoint',
    async (raw) => {
      const wrong: string[] = [];
      for (const { path, name } of integerQueries()) {
        const res = await t.api('GET', `${path}?${name}=${raw}`);
        const fields = res.body?.error?.details?.map((d: { field: string }) => d.field);
        if (res.status !== 422 || res.body.error.code !== 'validation_failed' || !fields.includes(name))
          wrong.push(`${path}?${name}=${raw} -> ${res.status} ${JSON.stringify(fields)}`);
      }
      expect(wrong).toEqual([]);
    },
  );

  it('reports a non-decimal integer beside the other faults of the same query', async () => {
    const res = await t.api('GET', `${LBS}?limit=0x10&sort=size`);
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['limit', 'sort']);
  });

  it('accepts decimal digits, leading zeros included', async () => {
    for (const raw of ['5', '05', '100']) {
      const res = await t.api('GET', `${LBS}?limit=${raw}`);
      expect({ raw, status: res.status }).toEqual({ raw, status: 200 });
    }
  });
});

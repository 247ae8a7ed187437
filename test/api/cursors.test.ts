/**
 * List cursors as an attacker sends them. A cursor is bound to
 * the list that handed it out (route, parent, team), its sort, order and every filter;
 * anything else, and anything that is not byte for byte a cursor the service signed, is 422
 * invalid_cursor, never a 500.
 */
import { ApiResponse, startTestService, TestService } from '../helpers/service';

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
    for (const other of ['/api/v1/servers', '/api/v1/vpn-gateways', '/api/v1/object-storage', '/api/v1/jobs', '/api/v1/settings/api-keys', '/api/v1/agent/threads', '/api/v1/webhooks', '/api/v1/audit-log']) {
      expectInvalidCursor(await t.api('GET', withCursor(`${other}?limit=1`, lbCursor)), other);
    }
  });

  it('answers 422 to a cursor used with another sort, order, status or filter', async () => {
    for (const query of ['sort=name', 'order=asc', 'status=creating', 'sort=created_at&order=asc']) {
      expectInvalidCursor(await t.api('GET', withCursor(`${LBS}?limit=1&${query}`, lbCursor)), query);
    }
    const audit = (await t.api('GET', '/api/v1/audit-log?limit=1&type=load_balancer.*')).body.meta.next_cursor;
    expect(audit).toEqual(expect.any(String));
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
    const junk = ['', '.', '..', 'a.b', `${body}.`, `.${signature}`, `${body}.${signature}.${signature}`, '%', '\u0000', 'null.null', `${Buffer.from('[]').toString('base64url')}.${signature}`, 'x'.repeat(1024)];
    for (const cursor of junk) {
      const res = await t.api('GET', withCursor(`${LBS}?limit=1`, cursor));
      expect({ cursor, status: res.status }).toEqual({ cursor, status: 422 });
    }
  });
});

/**
 * Every route that takes a body, walked from Fastify's own route tree so that a new route
 * cannot escape: an announced 50 MB body is refused before it is read, with 401 when the
 * request carries no credentials, 403 when it carries a session cookie without its CSRF
 * token, and 413 when it is authenticated; each answer in the envelope, and the connection
 * closed rather than drained. test/api/connections.test.ts covers the HTTP layer's limits
 * on one route; this file covers the routes.
 */
import { RawConnection } from '../helpers/raw-http';
import { concretePath, isWrite, routesOf } from '../helpers/routes';
import { eventually, request, startTestService, TestService } from '../helpers/service';

const ANNOUNCED = 50 * 1024 * 1024;
const CLOSED_WITHIN_MS = 15_000;

interface Refusal {
  route: string;
  status: number | undefined;
  code: string | undefined;
  closed: boolean;
}

describe('bodies sent to write routes', () => {
  let t: TestService;
  let writes: Array<{ method: string; url: string }>;
  let cookie: string;

  beforeAll(async () => {
    t = await startTestService();
    writes = routesOf(t.service.app.printRoutes({ commonPrefix: false })).filter(isWrite);
    // The embedded default has no identity provider: a key is exchanged for a session.
    const signedIn = await request(t.url, 'POST', '/auth/session', undefined, { key: t.key });
    expect(signedIn.status).toBe(201);
    cookie = /^(cloudplane_session=[^;]+)/.exec(signedIn.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!)![1];
  });
  afterAll(async () => t.stop());

  /** Sends the head of a request announcing a 50 MB JSON body and its first bytes, then waits for the answer and the hang-up. */
  async function refusal(method: string, url: string, headers: string): Promise<Refusal> {
    const conn = new RawConnection(t.url);
    try {
      await conn.ready;
      await conn.write(
        `${method} ${concretePath(url)} HTTP/1.1\r\nHost: localhost\r\n${headers}Content-Type: application/json\r\nContent-Length: ${ANNOUNCED}\r\n\r\n{"name":"`,
      );
      await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 50);
      const body = conn.json();
      return { route: `${method} ${url}`, status: conn.head()?.status, code: body?.error?.code, closed: conn.closed };
    } finally {
      conn.destroy();
    }
  }

  const refusalsOf = async (headers: string) => {
    const refusals: Refusal[] = [];
    for (const { method, url } of writes) refusals.push(await refusal(method, url, headers));
    return refusals;
  };

  it('walks every write route the server has', () => {
    expect(writes.length).toBeGreaterThan(40);
    expect(writes.map((w) => `${w.method} ${w.url}`)).toEqual(
      expect.arrayContaining(['POST /api/v1/load-balancers', 'POST /auth/session', 'PUT /api/v1/session', 'POST /api/v1/webhooks/listeners']),
    );
  });

  it('refuses each with 401 before reading the body when the request has no credentials', async () => {
    const refusals = await refusalsOf('');
    // POST /auth/session looks at its key in the handler, after the body: its announced
    // size is refused first, and still nothing is read.
    const signIn = refusals.find((r) => r.route === 'POST /auth/session');
    expect(signIn).toEqual({ route: 'POST /auth/session', status: 413, code: 'payload_too_large', closed: true });
    expect(refusals.filter((r) => r !== signIn && (r.status !== 401 || r.code !== 'unauthorized' || !r.closed))).toEqual([]);
  });

  it('refuses each with 403 before reading the body when a session cookie comes without its CSRF token', async () => {
    // POST /auth/session is how a session starts: it takes a key, and a cookie alone is no key.
    const refusals = (await refusalsOf(`Cookie: ${cookie}\r\n`)).filter((r) => r.route !== 'POST /auth/session');
    expect(refusals.filter((r) => r.status !== 403 || r.code !== 'forbidden' || !r.closed)).toEqual([]);
  });

  it('refuses each with 413 before reading the body when the request is authenticated', async () => {
    const refusals = await refusalsOf(`Authorization: Bearer ${t.key}\r\n`);
    expect(refusals.filter((r) => r.status !== 413 || r.code !== 'payload_too_large' || !r.closed)).toEqual([]);
  });
});

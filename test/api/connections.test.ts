/**
 * Connections as a hostile or broken client holds them, over raw TCP against the real
 * service (in-process, or in its own process where timing matters; run `npx tsc -p .`
 * first) with small timeouts: slow headers and bodies get 408 and are closed, idle and
 * silent connections are closed, an unauthenticated upload is refused before its body is
 * read, and every error the HTTP layer raises before a route (400, 408, 413, 431) comes in
 * the envelope with an X-Request-Id. Bounds on time are generous: the checks poll.
 */
import fs from 'node:fs';
import { RawConnection } from '../helpers/raw-http';
import { ChildService, startChildService } from '../helpers/child-service';
import { eventually, startTestService, tempDataDir, TestService } from '../helpers/service';

const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 1500;
const KEEPALIVE_TIMEOUT_MS = 1000;
const IDLE_TIMEOUT_MS = 2000;
/** Far past every timeout above, and still short of Node's defaults (60 s and more). */
const CLOSED_WITHIN_MS = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The most a client can write that the server never reads: the server's TCP receive buffer
 * and the client's send buffer at the largest the kernel lets them grow (Linux autotunes
 * them up to the third field of tcp_rmem and tcp_wmem; 6 MiB and 4 MiB by default, 32 MiB
 * for receiving on some machines), and a MiB for Node's own buffers.
 */
function unreadBytesBound(): number {
  const largest = (file: string, fallback: number) => {
    try {
      return Number(fs.readFileSync(file, 'utf8').trim().split(/\s+/)[2]) || fallback;
    } catch {
      return fallback;
    }
  };
  return largest('/proc/sys/net/ipv4/tcp_rmem', 6 * 1024 * 1024) + largest('/proc/sys/net/ipv4/tcp_wmem', 4 * 1024 * 1024) + 1024 * 1024;
}

/** An answer in the envelope, with the request id the service made for it. */
function expectEnvelope(conn: RawConnection, status: number, code: string): void {
  const head = conn.head();
  expect(head?.status).toBe(status);
  expect(head?.headers['x-request-id']).toMatch(/^req_[0-9a-z]{20}$/);
  expect(head?.headers['content-type']).toMatch(/^application\/json/);
  const body = conn.json();
  expect(body?.error?.code).toBe(code);
  expect(typeof body?.error?.message).toBe('string');
  expect(['synced', 'stale', 'unavailable']).toContain(body?.meta?.persistence);
  expect(body?.meta?.provider).toBe('connected');
}

describe('connection limits', () => {
  let t: TestService;
  const open: RawConnection[] = [];
  const connect = async () => {
    const conn = new RawConnection(t.url);
    open.push(conn);
    await conn.ready;
    return conn;
  };

  beforeAll(async () => {
    t = await startTestService({
      CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      CLOUDPLANE_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      CLOUDPLANE_HTTP_KEEPALIVE_TIMEOUT_MS: String(KEEPALIVE_TIMEOUT_MS),
      CLOUDPLANE_HTTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    });
  });
  afterEach(() => {
    for (const conn of open.splice(0)) conn.destroy();
  });
  afterAll(async () => t.stop());

  it('closes slow-loris connections that send a header byte at a time, with 408 in the envelope', async () => {
    const conns = await Promise.all(Array.from({ length: 20 }, () => connect()));
    await Promise.all(conns.map((c) => c.write(`GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.key}\r\nX-Slow: `)));
    // One byte every 200 ms: never idle long enough for the idle timeout, so only the
    // headers timeout can end it.
    const drip = setInterval(() => conns.forEach((c) => void c.write('a')), 200);
    try {
      await eventually(async () => conns.every((c) => c.closed), CLOSED_WITHIN_MS, 100);
    } finally {
      clearInterval(drip);
    }
    for (const conn of conns) expectEnvelope(conn, 408, 'request_timeout');
  });

  it('closes a connection whose body trickles in, with 408 in the envelope', async () => {
    const conn = await connect();
    await conn.write(
      `POST /api/v1/load-balancers HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    const drip = setInterval(() => void conn.write(' '), 200);
    try {
      await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
    } finally {
      clearInterval(drip);
    }
    expectEnvelope(conn, 408, 'request_timeout');
  });

  it('closes a kept-alive connection that sends no further request', async () => {
    const conn = await connect();
    await conn.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await eventually(async () => conn.head()?.status === 200, CLOSED_WITHIN_MS);
    expect(conn.head()?.headers.connection).toBe('keep-alive');
    await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
  });

  it('closes a connection that never sends a byte, with 408: no request arrived in time', async () => {
    const conn = await connect();
    await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
    expectEnvelope(conn, 408, 'request_timeout');
  });

  it('cuts a connection silent both ways for the idle timeout, even while its request is being handled', async () => {
    // The real store answers this service's page of servers only after the idle timeout.
    const store = t.service.ctx.store;
    const page = store.page.bind(store);
    store.page = async (...args: Parameters<typeof store.page>) => {
      if (args[0] === 'Server') await sleep(IDLE_TIMEOUT_MS * 3);
      return page(...args);
    };
    try {
      const conn = await connect();
      await conn.write(`GET /api/v1/servers HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.key}\r\n\r\n`);
      await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
      expect(conn.received).toBe('');
    } finally {
      store.page = page;
    }
  });

  it('refuses a body over the limit with 413 before reading it, and hangs up', async () => {
    const conn = await connect();
    await conn.write(
      `POST /api/v1/load-balancers HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n{"name":`,
    );
    await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
    expectEnvelope(conn, 413, 'payload_too_large');
    expect(conn.head()?.headers.connection).toBe('close');
  });

  it('answers headers over the size limit with 431 in the envelope', async () => {
    const conn = await connect();
    await conn.write(`GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
    expectEnvelope(conn, 431, 'headers_too_large');
  });

  it.each([
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n'],
    ['a Content-Length that is not a number', 'POST /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ten\r\n\r\n'],
    ['a header line without a colon', 'GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nno colon here\r\n\r\n'],
    ['an HTTP/1.1 request without Host', 'GET /api/v1/regions HTTP/1.1\r\n\r\n'],
  ])('answers %s with 400 in the envelope', async (_what, raw) => {
    const conn = await connect();
    await conn.write(raw);
    await eventually(async () => conn.json() !== null, CLOSED_WITHIN_MS, 50);
    expectEnvelope(conn, 400, 'bad_request');
  });
});

describe('refused uploads, against the service in a process of its own', () => {
  // In its own process the service's hang-up races the client's reads, as over a network;
  // in-process, the test reads every answer before the service's next turn.
  let child: ChildService;
  const key = `cpk_${'u'.repeat(40)}`;
  beforeAll(async () => {
    child = await startChildService({ dataDir: tempDataDir(), key, env: { CLOUDPLANE_SIM_DELAY_MS: '50' } });
  });
  afterAll(async () => {
    await child.stop();
  });

  it('refuses unauthenticated 100 MB uploads with 401, which the client reads, and hangs up without reading the body', async () => {
    const total = 100 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    // Five times over: a hang-up that resets the connection at once wiped the 401 from
    // about half of the clients before they could read it.
    for (let attempt = 1; attempt <= 5; attempt++) {
      const conn = new RawConnection(child.url);
      await conn.ready;
      await conn.write(`POST /api/v1/load-balancers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`);
      let sent = 0;
      const deadline = Date.now() + 30_000;
      while (sent < total && !conn.closed && Date.now() < deadline) {
        if (!(await conn.write(chunk))) break;
        sent += chunk.length;
      }
      await eventually(async () => conn.closed, CLOSED_WITHIN_MS, 100);
      expectEnvelope(conn, 401, 'unauthorized');
      expect(conn.head()?.headers.connection).toBe('close');
      // What the client got into its own and the server's socket buffers before the
      // hang-up, not the 100 MB: the service never read the body.
      expect(conn.written).toBeLessThan(Math.min(unreadBytesBound(), total / 2));
      conn.destroy();
    }
  });

  it('refuses a small body sent after its headers with 401, reads and drops it, and keeps the connection for the next request', async () => {
    const conn = new RawConnection(child.url);
    await conn.ready;
    const body = JSON.stringify({ name: 'x'.repeat(200), region: 'fra1' });
    await conn.write(
      `POST /api/v1/load-balancers HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer cpk_${'n'.repeat(40)}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // Refused before its body arrived: a hang-up here would cost the client a new connection per refusal.
    await eventually(async () => conn.json() !== null, CLOSED_WITHIN_MS, 20);
    expectEnvelope(conn, 401, 'unauthorized');
    expect(conn.head()?.headers.connection).not.toBe('close');
    await conn.write(body);
    await conn.write(`GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await eventually(async () => conn.received.includes('HTTP/1.1 200 '), CLOSED_WITHIN_MS, 20);
    expect(conn.closed).toBe(false);
    conn.destroy();
  });
});

describe('connection cap', () => {
  const MAX = 5;
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_HTTP_MAX_CONNECTIONS: String(MAX) });
  });
  afterAll(async () => t.stop());

  const healthz = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';

  it(`closes connections past the ${MAX}th at once, and takes new ones when a place frees up`, async () => {
    const held = Array.from({ length: MAX }, () => new RawConnection(t.url));
    try {
      await Promise.all(held.map(async (conn) => (await conn.ready, conn.write(healthz))));
      await eventually(async () => held.every((conn) => conn.head()?.status === 200));
      const extra = new RawConnection(t.url);
      await extra.ready.catch(() => undefined);
      await extra.write(healthz);
      await eventually(async () => extra.closed, CLOSED_WITHIN_MS, 50);
      expect(extra.received).toBe('');
      expect(held.some((conn) => conn.closed)).toBe(false);

      held.shift()!.destroy();
      await eventually(
        async () => {
          const next = new RawConnection(t.url);
          await next.ready.catch(() => undefined);
          await next.write(healthz);
          await sleep(100);
          next.destroy();
          return next.head()?.status === 200;
        },
        CLOSED_WITHIN_MS,
        50,
      );
    } finally {
      for (const conn of held) conn.destroy();
    }
  });
});

describe('connections per client address', () => {
  const PER_ADDRESS = 8;
  // Below the connections the other address opens: without a per-address cap, it alone fills the service.
  const MAX = 40;
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({
      CLOUDPLANE_HTTP_MAX_CONNECTIONS: String(MAX),
      CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      // Past this test: the held connections stay until it ends.
      CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '30000',
      CLOUDPLANE_HTTP_FIRST_REQUEST_TIMEOUT_MS: '30000',
    });
  });
  afterAll(async () => t.stop());

  it(`keeps ${PER_ADDRESS} idle connections of one address, closes the rest from it at once, and serves another address`, async () => {
    const greedy = Array.from({ length: MAX + 10 }, () => new RawConnection(t.url, '127.0.0.2'));
    try {
      await Promise.all(greedy.map((conn) => conn.ready.catch(() => undefined)));
      await eventually(async () => greedy.filter((conn) => conn.closed).length === MAX + 10 - PER_ADDRESS, CLOSED_WITHIN_MS, 50);
      const other = new RawConnection(t.url, '127.0.0.1');
      try {
        await other.ready;
        await other.write(`GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.key}\r\n\r\n`);
        await eventually(async () => other.json() !== null || other.closed, CLOSED_WITHIN_MS, 20);
        expect(other.head()?.status).toBe(200);
      } finally {
        other.destroy();
      }
      // The ones kept were not cut meanwhile: only the excess was.
      expect(greedy.filter((conn) => !conn.closed)).toHaveLength(PER_ADDRESS);
    } finally {
      for (const conn of greedy) conn.destroy();
    }
  });
});

describe('first request timeout', () => {
  const FIRST_REQUEST_TIMEOUT_MS = 300;
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_HTTP_HEADERS_TIMEOUT_MS: '30000', CLOUDPLANE_HTTP_FIRST_REQUEST_TIMEOUT_MS: String(FIRST_REQUEST_TIMEOUT_MS) });
  });
  afterAll(async () => t.stop());

  it('closes a new connection that sends nothing, or half a request, with 408 long before the headers timeout', async () => {
    const silent = new RawConnection(t.url);
    const partial = new RawConnection(t.url);
    try {
      await Promise.all([silent.ready, partial.ready]);
      await partial.write('GET /api/v1/regions HTTP/1.1\r\nHost: localhost\r\n');
      // Far below the 30 s headers timeout, the only other bound on them.
      await eventually(async () => silent.closed && partial.closed, CLOSED_WITHIN_MS, 50);
      expectEnvelope(silent, 408, 'request_timeout');
      expectEnvelope(partial, 408, 'request_timeout');
    } finally {
      silent.destroy();
      partial.destroy();
    }
  });

  it('leaves a connection alone once its first request arrived: the per-request timeouts apply', async () => {
    const conn = new RawConnection(t.url);
    try {
      await conn.ready;
      await conn.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await eventually(async () => conn.head()?.status === 200, CLOSED_WITHIN_MS);
      await sleep(FIRST_REQUEST_TIMEOUT_MS * 5);
      expect(conn.closed).toBe(false);
      expect(conn.head()?.headers.connection).toBe('keep-alive');
    } finally {
      conn.destroy();
    }
  });
});

describe('load shedding', () => {
  let t: TestService;
  beforeAll(async () => {
    // Any event-loop delay above 1 ms (beyond the 10 ms sampling resolution) counts as overload.
    t = await startTestService({ CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '1', CLOUDPLANE_OVERLOAD_RETRY_AFTER_SECONDS: '7' });
  });
  afterAll(async () => t.stop());

  /** Holds the event loop the service shares with this test, as a CPU-bound request would. */
  const blockEventLoop = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // busy
    }
  };

  it('answers /api/v1 with 503 service_overloaded and Retry-After while the event loop lags, keeps /healthz up, and recovers', async () => {
    const [shed, keyless, health] = await eventually(
      async () => {
        blockEventLoop(400);
        const answers = await Promise.all([
          t.api('GET', '/api/v1/regions'),
          t.api('GET', '/api/v1/regions', undefined, { key: null }),
          t.api('GET', '/healthz', undefined, { key: null }),
        ]);
        return answers[0].status === 503 ? answers : null;
      },
      30_000,
      100,
    );
    expect(shed.body.error.code).toBe('service_overloaded');
    expect(shed.body.meta.persistence).toBe('synced');
    expect(shed.headers.get('retry-after')).toBe('7');
    expect(shed.headers.get('x-request-id')).toMatch(/^req_/);
    expect(health.status).toBe(200);
    // Without a key too: shedding comes before authentication and its store lookups.
    expect({ status: keyless.status, code: keyless.body.error.code }).toEqual({ status: 503, code: 'service_overloaded' });
    // Once the loop runs freely again, the next samples let requests through.
    await eventually(async () => (await t.api('GET', '/api/v1/regions')).status === 200, 30_000, 200);
  });
});

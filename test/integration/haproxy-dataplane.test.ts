/**
 * The data plane, for real: Debian's haproxy runs the renderer's output on loopback in
 * front of HTTP and TCP backends this test starts, and real traffic goes through it. The
 * backends' health is read by the same code (state.ts) that reads an HAProxy Pod's stats
 * in the cluster. Nothing here times anything: every wait polls.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { newId } from '../../src/lib/ids';
import type { DesiredBackend, LoadBalancerDesired } from '../../src/drivers/load-balancer';
import { renderHaproxyConfig, STICKY_COOKIE } from '../../src/drivers/haproxy/render';
import { httpStatsSource, readBackendHealth, readServerStats, runtimeSocketStatsSource } from '../../src/drivers/haproxy/state';
import { LocalHaproxy, makeTestCertificate, startHaproxy } from '../helpers/haproxy';
import { freePort } from '../helpers/kube-apiserver';
import { eventually } from '../helpers/service';
import { desiredLoadBalancer } from '../helpers/load-balancer-desired';

/** A backend that answers with its name, counts what it served, and can fail its health path or hold requests. */
interface HttpBackend {
  name: string;
  serverId: string;
  port: number;
  served: number;
  healthy: boolean;
  /** Requests to /hold waiting for release(). */
  held: http.ServerResponse[];
  lastHeaders: http.IncomingHttpHeaders | null;
  release(): void;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function httpBackend(name: string): Promise<HttpBackend> {
  const backend: HttpBackend = {
    name,
    serverId: newId('svr'),
    port: 0,
    served: 0,
    healthy: true,
    held: [],
    lastHeaders: null,
    release() {
      for (const res of backend.held.splice(0)) res.end(name);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    if (req.url === '/health') {
      res.statusCode = backend.healthy ? 200 : 503;
      res.end();
      return;
    }
    backend.served += 1;
    backend.lastHeaders = req.headers;
    if (req.url === '/hold') backend.held.push(res);
    else res.end(name);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  backend.port = (server.address() as net.AddressInfo).port;
  cleanups.push(async () => {
    backend.release();
    server.closeAllConnections();
    await backend.close();
  });
  return backend;
}

/** A TCP backend: says its name on connect, then echoes. */
async function tcpBackend(name: string): Promise<{ name: string; serverId: string; port: number }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.write(`${name}\n`);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { name, serverId: newId('svr'), port: (server.address() as net.AddressInfo).port };
}

function attached(b: { serverId: string; port: number }, draining = false): DesiredBackend {
  return { server_id: b.serverId, port: b.port, address: '127.0.0.1', draining, drain_until: draining ? new Date(Date.now() + 60_000).toISOString() : null };
}

interface Balancer {
  haproxy: LocalHaproxy;
  port: number;
  statsUrl: string;
  socket: string;
  desired: LoadBalancerDesired;
  render(desired: LoadBalancerDesired): string;
}

async function balancer(spec: Partial<LoadBalancerDesired>, backends: DesiredBackend[], certificateFile: string | null = null): Promise<Balancer> {
  const [port, statsPort] = [await freePort(), await freePort()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-lb-'));
  const socket = path.join(dir, 'admin.sock');
  const render = (d: LoadBalancerDesired) =>
    renderHaproxyConfig(d, {
      listen: { address: '127.0.0.1', port },
      stats: { address: '127.0.0.1', port: statsPort },
      certificateFile,
      runtimeSocket: socket,
      // Checks often, so a test waits for a state change a short while.
      checkIntervalMs: 200,
    });
  const desired = desiredLoadBalancer({ backends, ...spec });
  const haproxy = await startHaproxy(render(desired));
  cleanups.push(async () => {
    await haproxy.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { haproxy, port, statsUrl: `http://127.0.0.1:${statsPort}`, socket, desired, render };
}

/** Waits until HAProxy's checks have every listed backend up. */
async function allUp(lb: Balancer, desired = lb.desired): Promise<void> {
  await eventually(async () => (await readBackendHealth(httpStatsSource(lb.statsUrl), desired)).every((b) => b.up), 20_000, 50);
}

interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** One request on a connection of its own (so each is balanced on its own, from `localAddress` if given). */
function get(port: number, urlPath = '/', options: { localAddress?: string; cookie?: string; ca?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = options.ca
      ? https.request({ host: '127.0.0.1', port, path: urlPath, agent: false, ca: options.ca, servername: 'localhost' })
      : http.request({
          host: '127.0.0.1',
          port,
          path: urlPath,
          agent: false,
          localAddress: options.localAddress,
          headers: options.cookie ? { cookie: options.cookie } : {},
        });
    request.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

/** `n` requests one after another; how many each backend answered. */
async function tally(n: number, send: () => Promise<Answer>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i += 1) {
    const answer = await send();
    expect(answer.status).toBe(200);
    counts[answer.body] = (counts[answer.body] ?? 0) + 1;
  }
  return counts;
}

describe('HAProxy data plane', () => {
  it('round robin spreads requests evenly', async () => {
    const backends = await Promise.all(['a', 'b', 'c'].map(httpBackend));
    const lb = await balancer(
      { algorithm: 'round_robin' },
      backends.map((b) => attached(b)),
    );
    await allUp(lb);
    expect(await tally(30, () => get(lb.port))).toEqual({ a: 10, b: 10, c: 10 });
  });

  it('least connections sends new requests to the idle backend', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(httpBackend));
    const lb = await balancer({ algorithm: 'least_connections' }, [attached(a), attached(b)]);
    await allUp(lb);
    // Three long requests: one on each backend, the third on either (a tie), so one
    // backend holds two...
    const held: Array<Promise<Answer>> = [];
    for (let n = 1; n <= 3; n += 1) {
      held.push(get(lb.port, '/hold'));
      await eventually(async () => a.held.length + b.held.length === n);
    }
    const [busy, idle] = a.held.length === 2 ? [a, b] : [b, a];
    // ...and the other's ends: busy has two connections, idle none. A request just answered
    // may still count on idle for a moment, so idle counts one at most, and is still the least.
    idle.release();
    expect(await tally(10, () => get(lb.port))).toEqual({ [idle.name]: 10 });
    busy.release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('source hashing keeps each client address on one backend', async () => {
    const backends = await Promise.all(['a', 'b', 'c'].map(httpBackend));
    const lb = await balancer(
      { algorithm: 'ip_hash' },
      backends.map((b) => attached(b)),
    );
    await allUp(lb);
    const chosen = new Set<string>();
    for (let host = 2; host <= 17; host += 1) {
      const localAddress = `127.0.0.${host}`;
      const counts = await tally(5, () => get(lb.port, '/', { localAddress }));
      expect(Object.values(counts)).toEqual([5]);
      chosen.add(Object.keys(counts)[0]);
    }
    // Sixteen addresses do not all hash to one backend.
    expect(chosen.size).toBeGreaterThan(1);
  });

  it('sticky sessions keep a client with the cookie on its backend', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(httpBackend));
    const lb = await balancer({ sticky_sessions: true }, [attached(a), attached(b)]);
    await allUp(lb);
    const first = await get(lb.port);
    const setCookie = first.headers['set-cookie']?.[0] ?? '';
    expect(setCookie).toMatch(new RegExp(`^${STICKY_COOKIE}=[0-9a-f]{16}; path=/; HttpOnly`));
    const cookie = setCookie.split(';')[0];
    expect(await tally(10, () => get(lb.port, '/', { cookie }))).toEqual({ [first.body]: 10 });
    // Without it, round robin goes on.
    expect(await tally(10, () => get(lb.port))).toEqual({ a: 5, b: 5 });
  });

  it('a draining backend keeps the clients stuck to it and gets no new ones', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(httpBackend));
    const lb = await balancer({ sticky_sessions: true }, [attached(a), attached(b)]);
    await allUp(lb);
    const cookieFor: Record<string, string> = {};
    while (!cookieFor.a || !cookieFor.b) {
      const answer = await get(lb.port);
      cookieFor[answer.body] = (answer.headers['set-cookie']?.[0] ?? '').split(';')[0];
    }
    // a is detached and drains.
    const draining = { ...lb.desired, backends: [attached(a, true), attached(b)] };
    await lb.haproxy.reload(lb.render(draining));
    await allUp(lb, draining);
    // New clients go to b only (polled: the old worker shares the socket until it stops accepting).
    await eventually(async () => JSON.stringify(await tally(10, () => get(lb.port))) === JSON.stringify({ b: 10 }), 20_000);
    // a's clients stay with a while it drains.
    expect(await tally(5, () => get(lb.port, '/', { cookie: cookieFor.a }))).toEqual({ a: 5 });
    expect(await tally(5, () => get(lb.port, '/', { cookie: cookieFor.b }))).toEqual({ b: 5 });
  });

  it('takes out a backend that stops answering its health path, and reports it not up', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(httpBackend));
    const lb = await balancer({}, [attached(a), attached(b)]);
    await allUp(lb);
    b.healthy = false;
    const overHttp = httpStatsSource(lb.statsUrl);
    const health = await eventually(
      async () => {
        const h = await readBackendHealth(overHttp, lb.desired);
        return h.find((x) => x.server_id === b.serverId)?.up === false ? h : null;
      },
      20_000,
      50,
    );
    expect(health).toEqual([
      { server_id: a.serverId, port: a.port, up: true },
      { server_id: b.serverId, port: b.port, up: false },
    ]);
    // The runtime API says the same.
    expect(await readBackendHealth(runtimeSocketStatsSource(lb.socket), lb.desired)).toEqual(health);
    expect((await readServerStats(overHttp)).find((s) => s.server.startsWith(b.serverId))).toMatchObject({ state: 'down', checkStatus: 'L7STS' });
    expect(await tally(10, () => get(lb.port))).toEqual({ a: 10 });
    // Back in once it answers again.
    b.healthy = true;
    await allUp(lb);
  });

  it('terminates TLS with the test certificate and forwards plain HTTP', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-tls-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const { certificateFile, certificatePem } = await makeTestCertificate(dir);
    const a = await httpBackend('a');
    const lb = await balancer({ protocol: 'https', port: 443, ssl_certificate_id: 'cert-test' }, [attached(a)], certificateFile);
    await allUp(lb);
    const answer = await get(lb.port, '/', { ca: certificatePem });
    expect(answer).toMatchObject({ status: 200, body: 'a' });
    expect(a.lastHeaders).toMatchObject({ 'x-forwarded-proto': 'https', 'x-forwarded-for': '127.0.0.1' });
    // Plain HTTP on the TLS port gets no answer from a backend.
    await expect(get(lb.port)).rejects.toThrow();
    expect(a.served).toBe(1);
  });

  it('balances TCP connections in TCP mode', async () => {
    const backends = await Promise.all(['a', 'b'].map(tcpBackend));
    const lb = await balancer(
      { protocol: 'tcp', port: 5432, health_check_path: '/health' },
      backends.map((b) => attached(b)),
    );
    await allUp(lb);
    const greet = () =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(lb.port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (text === `${text.split('\n')[0]}\nping\n`) socket.end();
          else if (text.endsWith('\n') && !text.includes('ping')) socket.write('ping\n');
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    const seen: Record<string, number> = {};
    for (let i = 0; i < 10; i += 1) {
      const text = await greet();
      const [name, echoed] = text.split('\n');
      expect(echoed).toBe('ping');
      seen[name] = (seen[name] ?? 0) + 1;
    }
    expect(seen).toEqual({ a: 5, b: 5 });
  });

  it('takes a reload sent right after it started (its master re-executes itself after loading)', async () => {
    const [a, b] = await Promise.all(['a', 'b'].map(httpBackend));
    const lb = await balancer({}, [attached(a)]);
    const changed = { ...lb.desired, backends: [attached(a), attached(b)] };
    await lb.haproxy.reload(lb.render(changed));
    await allUp(lb, changed);
    // Round robin over both: b answers within two requests.
    await eventually(async () => (await get(lb.port)).body === 'b');
  });

  it('applies a configuration change by graceful reload without failing a request in flight', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(httpBackend));
    const lb = await balancer({}, [attached(a), attached(b)]);
    await allUp(lb);

    // Requests held open on both backends across the reloads...
    const held = [get(lb.port, '/hold'), get(lb.port, '/hold')];
    await eventually(async () => a.held.length + b.held.length === 2);
    // ...and a steady stream of new ones, each on its own connection.
    const failures: string[] = [];
    let sent = 0;
    let streaming = true;
    const stream = Promise.all(
      [1, 2, 3, 4].map(async () => {
        while (streaming) {
          sent += 1;
          try {
            const answer = await get(lb.port);
            if (answer.status !== 200) failures.push(`status ${answer.status}`);
          } catch (err) {
            failures.push(String(err));
          }
        }
      }),
    );

    // c attached, a detached and draining.
    const changed = { ...lb.desired, backends: [attached(a, true), attached(b), attached(c)] };
    const sentBefore = sent;
    await lb.haproxy.reload(lb.render(changed));
    await allUp(lb, changed);
    await eventually(async () => c.served > 0);
    const stats = await readServerStats(httpStatsSource(lb.statsUrl));
    expect(stats.find((s) => s.server.startsWith(a.serverId))).toMatchObject({ state: 'drain', weight: 0 });
    // The draining backend takes no new requests (once the old worker, which shares the
    // listening socket, has stopped accepting: polled, not assumed).
    await eventually(async () => {
      const aBefore = a.served;
      const counts = await tally(20, () => get(lb.port));
      return a.served === aBefore && Object.keys(counts).sort().join() === 'b,c';
    }, 20_000);

    // a's drain ends: it leaves the configuration.
    const final = { ...lb.desired, backends: [attached(b), attached(c)] };
    await lb.haproxy.reload(lb.render(final));
    await allUp(lb, final);
    streaming = false;
    await stream;

    // The held requests, begun before both reloads, finish on their backends.
    a.release();
    b.release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    expect(sent).toBeGreaterThan(sentBefore);
    expect(failures).toEqual([]);
  });
});

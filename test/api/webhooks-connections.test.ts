/**
 * The dispatcher's connections to receivers (docs/api.md "Fair sharing"): an attempt's
 * connection is kept for the next attempt to the same receiver; the connections kept idle
 * stay within CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS over all receivers; and a kept connection
 * that the receiver closed as an attempt took it costs the delivery no attempt. The
 * receivers are real HTTP servers on loopback that count, on their side, the connections
 * the service opens and holds.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { startTestService, TestService, eventually } from '../helpers/service';

const IDLE = 2;

/** A receiver that answers 200 and counts connections; `closeReused` resets a connection on its second request, unanswered. */
async function countingReceiver(closeReused = false) {
  const requestsOn = new Map<Socket, number>();
  let opened = 0;
  let answered = 0;
  let mostOnOne = 0;
  const server = http.createServer((req, res) => {
    const socket = req.socket;
    const nth = (requestsOn.get(socket) ?? 0) + 1;
    requestsOn.set(socket, nth);
    mostOnOne = Math.max(mostOnOne, nth);
    req.resume();
    req.on('end', () => {
      if (closeReused && nth > 1) {
        socket.destroy();
        return;
      }
      answered++;
      res.end('ok');
    });
  });
  server.on('connection', (socket: Socket) => {
    opened++;
    requestsOn.set(socket, 0);
    socket.on('close', () => requestsOn.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    opened: () => opened,
    answered: () => answered,
    /** Connections open now, as the receiver sees them. */
    open: () => requestsOn.size,
    /** The most requests one connection carried. */
    mostOnOne: () => mostOnOne,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
type CountingReceiver = Awaited<ReturnType<typeof countingReceiver>>;

describe('webhook delivery connections', () => {
  let t: TestService;
  const receivers: CountingReceiver[] = [];

  const receiver = async (closeReused = false) => {
    const made = await countingReceiver(closeReused);
    receivers.push(made);
    return made;
  };
  const subscribe = async (url: string) => {
    const res = await t.api('POST', '/api/v1/webhooks', { url, events: ['bucket.created'] });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const bucket = async (name: string) => expect((await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' })).status).toBe(201);
  const unsubscribe = async (id: string) => expect((await t.api('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(200);

  beforeAll(async () => {
    t = await startTestService({
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001',
      CLOUDPLANE_WEBHOOK_IDLE_CONNECTIONS: String(IDLE),
    });
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await t?.stop();
  });

  it('sends the next attempt to a receiver on the connection the last one used', async () => {
    const target = await receiver();
    const id = await subscribe(target.url);
    for (let i = 0; i < 10; i++) {
      await bucket(`kept-${i}`);
      await eventually(async () => target.answered() === i + 1, 30_000);
    }
    // One after the other, a delivery finds the connection of the one before it idle (unless
    // the machine stalled past the idle time between them).
    expect(target.opened()).toBeLessThan(10);
    expect(target.mostOnOne()).toBeGreaterThan(1);
    await unsubscribe(id);
  });

  it('keeps no more idle connections than the cap over all receivers', async () => {
    const targets = await Promise.all([0, 1, 2, 3, 4].map(() => receiver()));
    const ids = await Promise.all(targets.map((target) => subscribe(target.url)));
    await bucket('fanned-out');
    await eventually(async () => targets.every((target) => target.answered() === 1), 30_000);
    // Five attempts at once opened five connections; past the cap, the rest were closed as they fell idle.
    await eventually(async () => targets.reduce((open, target) => open + target.open(), 0) <= IDLE, 30_000);
    expect(targets.reduce((open, target) => open + target.opened(), 0)).toBe(5);
    for (const id of ids) await unsubscribe(id);
  });

  it('makes a delivery on its first attempt when the receiver closed the kept connection it took', async () => {
    const target = await receiver(true);
    const id = await subscribe(target.url);
    await bucket('closed-first');
    await eventually(async () => target.answered() === 1, 30_000);
    await bucket('closed-second');
    await eventually(async () => target.answered() === 2, 30_000);
    // The second attempt took the first's connection, the receiver reset it unanswered, and a new one carried it.
    expect(target.opened()).toBe(2);
    // The receiver counts its answer before the dispatcher has recorded the outcome.
    const outcomes = async () => {
      const deliveries = await t.api('GET', `/api/v1/webhooks/${id}/deliveries?limit=10`);
      expect(deliveries.status).toBe(200);
      return deliveries.body.data.map((d: { status: string; attempt: string }) => [d.status, d.attempt]);
    };
    await eventually(async () => (await outcomes()).every(([status]: string[]) => status !== 'pending'), 30_000);
    expect(await outcomes()).toEqual([
      ['succeeded', '1/15'],
      ['succeeded', '1/15'],
    ]);
    await unsubscribe(id);
  });
});

/**
 * A server-sent event stream is bounded by what waits for its client: one that reads
 * keeps getting events; one that stops reading is cut off once more than `bufferBytes`
 * wait for it, instead of the service holding every event it would have sent.
 */
import net from 'node:net';
import Fastify, { FastifyInstance } from 'fastify';
import { EventStream, TOO_SLOW } from '../../src/api/event-stream';
import { serverSentEvents } from '../../src/cli/server-sent-events';
import { eventually } from '../helpers/service';

const BUFFER_BYTES = 256 * 1024;
const PAYLOAD = 'x'.repeat(16 * 1024);

let app: FastifyInstance;
let url: string;
const streams: EventStream[] = [];

beforeAll(async () => {
  app = Fastify();
  app.get('/events', (request, reply) => {
    const stream = new EventStream(request, reply, { keepAliveMs: 0, bufferBytes: BUFFER_BYTES, logLevel: 'debug' });
    streams.push(stream);
    // As fast as the event loop goes: far faster than a stalled client reads.
    let n = 0;
    const pump = () => {
      if (stream.closed) return;
      stream.send('tick', { n: n++, payload: PAYLOAD }, String(n));
      setImmediate(pump);
    };
    pump();
  });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  for (const stream of streams) stream.end('test over');
  // The sockets the tests left (a paused client's, say) are closed, not waited for.
  app.server.closeAllConnections();
  await app.close();
});

it('keeps sending to a client that reads', async () => {
  const controller = new AbortController();
  const response = await fetch(`${url}/events`, { signal: controller.signal });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const seen: number[] = [];
  for await (const event of serverSentEvents(response.body!)) {
    seen.push(JSON.parse(event.data).n);
    if (seen.length === 200) break;
  }
  controller.abort();
  // Far more bytes than the buffer went through, in order, none dropped.
  expect(seen.length * PAYLOAD.length).toBeGreaterThan(4 * BUFFER_BYTES);
  expect(seen).toEqual([...Array(200).keys()]);
});

it('cuts off a client that stops reading, once the buffer is full', async () => {
  const before = streams.length;
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  socket.write('GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n');
  const stream = await eventually(async () => streams[before], 5_000);
  await eventually(async () => stream.closed, 10_000);
  // Ended by the service, saying why as its last event; what the socket's buffers hold is all that was kept.
  socket.resume();
  const last = `event: closed\ndata: ${JSON.stringify({ reason: TOO_SLOW })}`;
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    // The tail only: the payloads before it are of no interest.
    received = (received + chunk.toString('latin1')).slice(-4096);
  });
  await eventually(async () => received.includes(last), 10_000);
  socket.destroy();
});

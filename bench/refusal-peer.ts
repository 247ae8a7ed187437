/**
 * The cheapest refusal a Fastify service can make, for the noisy-neighbour benchmark's
 * floods (`bench/noisy-neighbours.ts`): every request is answered 429 from an onRequest
 * hook, with the envelope and rate-limit headers the service sends, before its body is
 * read; every connection from 127.0.0.2 (the benchmark's reconnecting address) is reset
 * as it arrives. Run as its own process, pinned to the CPU the service had, the same
 * abuse against it gives the floor of what refusing costs on this machine, in this run.
 */
import Fastify from 'fastify';
import type { Socket } from 'node:net';

const REFUSED = JSON.stringify({
  error: { code: 'rate_limit_exceeded', message: 'More than 600 requests this minute; retry in 30 s.' },
  meta: { persistence: 'synced', provider: 'connected' },
});

async function main(): Promise<void> {
  const app = Fastify({ logger: false });
  // In front of Node's own connection listener, as the service's gate is (src/api/connection-limits.ts).
  const accept = app.server.listeners('connection');
  app.server.removeAllListeners('connection');
  app.server.on('connection', (socket: Socket) => {
    if (socket.remoteAddress === '127.0.0.2') return void socket.resetAndDestroy();
    for (const listener of accept) listener.call(app.server, socket);
  });
  app.addHook('onRequest', (_request, reply, done) => {
    void reply
      .code(429)
      .header('content-type', 'application/json; charset=utf-8')
      .header('x-ratelimit-limit', '600')
      .header('x-ratelimit-remaining', '0')
      .header('x-ratelimit-reset', String(Math.ceil(Date.now() / 60_000) * 60))
      .header('retry-after', '30')
      .send(REFUSED);
    done();
  });
  // Never reached (the hook has answered): a route only so that every path is the hook's.
  app.all('/*', () => ({}));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  console.log(`listening on ${address} `);
}

void main();

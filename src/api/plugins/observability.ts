/** Request ids, request metrics and the operational endpoints (/healthz, /readyz, /metrics). */
import type { FastifyInstance } from 'fastify';
import { randomString } from '../../lib/ids';
import { httpDuration, httpRequests, registry } from '../../metrics';
import type { ApiContext } from '../context';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps the client's X-Request-Id when it is sane, else makes one. */
export function requestIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && CLIENT_REQUEST_ID.test(value) ? value : `req_${randomString(20, '0123456789abcdefghijklmnopqrstuvwxyz')}`;
}

export function registerObservability(app: FastifyInstance, ctx: ApiContext, isReady: () => boolean): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });

  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const persistence = ctx.store.persistence();
    const ready = isReady() && persistence !== 'unavailable';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', persistence });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    return reply.header('Content-Type', registry.contentType).send(await registry.metrics());
  });
}

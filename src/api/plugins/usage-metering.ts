/**
 * Counts every authenticated /api/v1 request for its team's usage (src/usage/counters.ts),
 * whatever the answer: a hook of the authenticated context, so no route can be missed, and
 * an in-memory count, so a request costs no store write. A request refused before it was
 * authenticated (401, load shedding) belongs to no team and is not counted.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context';

export function meterRequests(app: FastifyInstance, ctx: ApiContext): void {
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.principal) ctx.usage.counters.countRequest(request.principal.team);
    done();
  });
}

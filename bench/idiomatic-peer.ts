/**
 * The read path's fair peer: the Fastify app a good team would write for the same two
 * answers (GET one load balancer, and a list of 50), without Cloudplane's code. It does the
 * work every such service does on a read, each the usual way:
 *   - a bearer key, hashed (SHA-256) and looked up, in an onRequest hook (401 without it);
 *   - `@fastify/rate-limit`, keyed by the key's hash, with the service's limit;
 *   - a prom-client histogram of request durations by route and status;
 *   - the answer serialised by Fastify from its response schema (fast-json-stringify), the
 *     same envelope and records as the service's (the family's record schema and `meta`).
 * It answers from memory the exact objects the service answered (the records the benchmark
 * read from it), so what differs between the two rows is the service's own work: its store,
 * its authentication, its metrics, its envelope.
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { Registry, Histogram } from 'prom-client';
import { Type, type Static } from '@sinclair/typebox';
import { loadBalancerFamily } from '../src/resources/load-balancer';
import { metaSchema } from '../src/api/envelope';

/** An object of the service's answers, its fields as they came. */
const Fields = Type.Record(Type.String(), Type.Unknown());

/** The answers the peer gives, read from the service over HTTP (so checked against this before use). */
export const PeerAnswers = Type.Object({
  /** The body of GET /api/v1/load-balancers/{id}, as the service answered it. */
  one: Type.Object({ data: Fields, meta: Fields }),
  /** The body of GET /api/v1/load-balancers?limit=50. */
  list: Type.Object({ data: Type.Array(Fields), meta: Fields }),
});
export type PeerAnswers = Static<typeof PeerAnswers>;

export interface Peer {
  url: string;
  close(): Promise<void>;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');

export async function startIdiomaticPeer(key: string, answers: PeerAnswers, perMinute: number): Promise<Peer> {
  const app = Fastify({ logger: false });
  const keys = new Map([[hashOf(key), { team: 'bench' }]]);

  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization;
    const principal = header?.startsWith('Bearer ') ? keys.get(hashOf(header.slice(7))) : undefined;
    if (!principal) return reply.code(401).send({ error: { code: 'unauthorized', message: 'A valid API key is required.' } });
    return undefined;
  });
  await app.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => hashOf(request.headers.authorization ?? ''),
  });

  const registry = new Registry();
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Request durations.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    duration.observe({ method: request.method, route: request.routeOptions.url ?? '', status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  const record = loadBalancerFamily.schemas.record;
  const byId = new Map(answers.list.data.map((item) => [String(item.id), item]));
  byId.set(String(answers.one.data.id), answers.one.data);
  app.get<{ Params: { id: string } }>('/api/v1/load-balancers/:id', {
    schema: { response: { 200: Type.Object({ data: record, meta: metaSchema() }) } },
    handler: async (request, reply) => {
      const found = byId.get(request.params.id);
      if (!found) return reply.code(404).send({ error: { code: 'load_balancer_not_found', message: 'Not found.' } });
      return { data: found, meta: answers.one.meta };
    },
  });
  app.get('/api/v1/load-balancers', {
    schema: { response: { 200: Type.Object({ data: Type.Array(record), meta: metaSchema() }) } },
    // A promise, as from the async handler a team would write: the route costs what earlier runs measured.
    handler: () => Promise.resolve({ data: answers.list.data, meta: answers.list.meta }),
  });

  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

/** Request ids, request metrics and the operational endpoints (/healthz, /readyz, /metrics). */
import type { FastifyInstance } from 'fastify';
import { randomFillSync } from 'node:crypto';
import { httpDuration, httpRequests, registry } from '../../metrics';
import type { ApiContext } from '../context';
import { routeConfigOf } from '../route-config';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const REQUEST_ID_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const REQUEST_ID_LENGTH = 20;
/** Bytes at or above this would bias the alphabet (256 % 36): rejected. */
const UNBIASED_LIMIT = 256 - (256 % REQUEST_ID_ALPHABET.length);

/**
 * Random bytes drawn from the CSPRNG a few kilobytes at a time: a request id per request
 * would otherwise cost a randomBytes call (a buffer and a trip into OpenSSL) each.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomByte(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++];
}

const ALPHABET_CODES = Buffer.from(REQUEST_ID_ALPHABET, 'latin1');
/** The id is written here, after its prefix, and read out as one string: 20 appends would make 20 strings. */
const idBytes = Buffer.from(`req_${'0'.repeat(REQUEST_ID_LENGTH)}`, 'latin1');
const PREFIX_LENGTH = 'req_'.length;

/** `req_` and 20 uniformly random characters of [0-9a-z] (rejection sampling, no modulo bias). */
function newRequestId(): string {
  for (let n = 0; n < REQUEST_ID_LENGTH;) {
    const byte = randomByte();
    if (byte >= UNBIASED_LIMIT) continue;
    idBytes[PREFIX_LENGTH + n] = ALPHABET_CODES[byte % ALPHABET_CODES.length];
    n++;
  }
  return idBytes.toString('latin1');
}

/** Keeps the client's X-Request-Id when it is sane, else makes one. */
export function requestIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && CLIENT_REQUEST_ID.test(value) ? value : newRequestId();
}

export function registerObservability(app: FastifyInstance, ctx: ApiContext, isReady: () => boolean): void {
  // Hooks that do not wait take Fastify's callback form: an async one costs a promise and a microtask per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: routeConfigOf(request).url ?? 'unmatched', status_code: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, (_request, reply) => {
    const persistence = ctx.store.persistence();
    const ready = isReady() && persistence !== 'unavailable';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', persistence });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    return reply.header('Content-Type', registry.contentType).send(await registry.metrics());
  });
}

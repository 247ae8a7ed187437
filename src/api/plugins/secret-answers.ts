/**
 * Answers that carry a secret (a new API key, a webhook's signing secret, a session's CSRF
 * token or cookie) are marked `Cache-Control: no-store`, so no browser, proxy or CDN keeps
 * a copy. Decided in one place, for every route as it is registered: a route whose answer
 * schema shows a secret field is marked by that alone, so a new one cannot be forgotten;
 * a route without an answer schema (sign-in) says so with `config.carriesSecret`. Only those
 * routes get the hook: every other answer pays nothing.
 */
import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import { isRecord, recordAt } from '../../lib/unknown-values';

/** Names of answer fields that hold a secret shown once (`public_key` and the like are not). */
const SECRET_FIELDS = new Set(['key', 'secret', 'csrf_token', 'token', 'api_key', 'password']);

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Whether a schema, or one below it (properties, items, anyOf, oneOf), has a secret field. */
function showsSecret(schema: unknown): boolean {
  if (!isRecord(schema)) return false;
  const properties = Object.entries(recordAt(schema, 'properties') ?? {});
  if (properties.some(([name, value]) => SECRET_FIELDS.has(name) || showsSecret(value))) return true;
  return [schema.items, ...listOf(schema.anyOf), ...listOf(schema.oneOf)].some(showsSecret);
}

/** Whether a 2xx answer of the route, as its schema describes it, holds a secret. */
function answersSecret(response: unknown): boolean {
  if (!isRecord(response)) return false;
  return Object.entries(response).some(([status, schema]) => /^2/.test(status) && showsSecret(schema));
}

const noStore: onRequestHookHandler = (_request, reply, done) => {
  reply.header('Cache-Control', 'no-store');
  done();
};

export function markSecretAnswers(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const response = route.schema?.response;
    if (!route.config?.carriesSecret && !answersSecret(response)) return;
    const own = route.onRequest;
    route.onRequest = own === undefined ? [noStore] : [...(Array.isArray(own) ? own : [own]), noStore];
  });
}

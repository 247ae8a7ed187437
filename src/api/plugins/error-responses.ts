/**
 * The error answers any /api/v1 route can give, documented on every operation: a route
 * module lists the statuses of its own rules (404, 409, ...), and this fills in those
 * the shared hooks and the error handler produce, so the OpenAPI document never leaves
 * a status out that a client can receive. Must be registered before @fastify/swagger
 * and before the routes.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Type } from '@sinclair/typebox';

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
    request_id: Type.Optional(Type.String()),
  }),
  meta: Type.Object({ persistence: Type.String(), provider: Type.String() }),
});

/** Methods whose bodies are parsed (Fastify leaves GET and HEAD bodies alone). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The statuses the shared machinery can answer on a route, whatever its handler does. */
export function sharedErrorStatuses(method: string, options: { public?: boolean; hasInput: boolean; hasParams: boolean }): number[] {
  const statuses = [400, 429, 503]; // bad URL or body, rate limit, store of record unreachable
  if (!options.public) statuses.push(401);
  if (BODY_METHODS.has(method)) statuses.push(413, 415);
  if (options.hasInput || BODY_METHODS.has(method)) statuses.push(422);
  if (options.hasParams) statuses.push(404);
  return statuses;
}

export function documentSharedErrors(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith('/api/v1/')) return;
    const schema = (route.schema ??= {}) as { hide?: boolean; params?: unknown; querystring?: unknown; body?: unknown; response?: Record<string | number, unknown> };
    if (schema.hide) return;
    const response = (schema.response ??= {});
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const hasParams = route.url.includes(':');
    const hasInput = Boolean(hasParams || schema.querystring);
    for (const method of methods) {
      for (const status of sharedErrorStatuses(method, { public: route.config?.public === true, hasInput, hasParams })) {
        response[status] ??= ErrorEnvelope;
      }
    }
  });
}

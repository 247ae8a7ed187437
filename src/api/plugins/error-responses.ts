/**
 * The error answers any /api/v1 route can give, documented on every operation: a route
 * module lists the statuses of its own rules (404, 409, ...), and this fills in those
 * the shared hooks and the error handler produce, so the OpenAPI document never leaves
 * a status out that a client can receive. Registered in the authenticated context before
 * its routes, so it documents exactly the routes behind the key.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Type } from '@sinclair/typebox';
import { isRead } from '../../accounts/roles';
import { MAX_ERROR_DETAILS } from '../../lib/errors';
import { isRecord } from '../../lib/unknown-values';

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), { maxItems: MAX_ERROR_DETAILS })),
    more_details: Type.Optional(
      Type.Integer({ minimum: 1, description: 'How many more problems there are than `details` names (present only when there are more).' }),
    ),
    request_id: Type.Optional(Type.String()),
  }),
  meta: Type.Object({ persistence: Type.String(), provider: Type.String() }),
});

/** Methods whose bodies are parsed (Fastify leaves GET and HEAD bodies alone). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The statuses the shared machinery can answer on a route, whatever its handler does. */
export function sharedErrorStatuses(method: string, options: { hasInput: boolean; hasParams: boolean }): number[] {
  // bad URL or body, no valid key, rate limit, store of record unreachable or overloaded
  const statuses = [400, 401, 429, 503];
  if (BODY_METHODS.has(method)) statuses.push(413, 415);
  // A write is refused to a viewer and to a read_only key (accounts/roles.ts).
  if (!isRead(method)) statuses.push(403);
  if (options.hasInput || BODY_METHODS.has(method)) statuses.push(422);
  if (options.hasParams) statuses.push(404);
  return statuses;
}

export function documentSharedErrors(api: FastifyInstance): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const schema = (route.schema ??= {});
    if (schema.hide) return;
    const response = isRecord(schema.response) ? schema.response : {};
    schema.response = response;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const hasParams = route.url.includes(':');
    const hasInput = Boolean(hasParams || schema.querystring);
    for (const method of methods) {
      for (const status of sharedErrorStatuses(method, { hasInput, hasParams })) {
        response[status] ??= ErrorEnvelope;
      }
    }
  });
}

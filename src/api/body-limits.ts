/**
 * How large a body each route takes, in one place (docs/api.md, Limits): what its schema can
 * legitimately hold, not Fastify's 1 MiB for all. Most write bodies are a few hundred bytes,
 * every field bounded by its schema; a body past that is no request the service can honour,
 * only work for the parser and the validator. ajv cannot stop after a number of errors,
 * so the body limit is also what bounds its work on a body that is all errors: a 200 KB
 * array of bad items held the event loop for a second.
 *
 * A route that sets its own bodyLimit (the S3 endpoint's notifications, a listener's
 * answers) keeps it. The limit is checked against Content-Length before the body is read,
 * and only after authentication (onRequest): a refused body is never read (api/plugins/errors.ts).
 */
import type { FastifyInstance, RouteOptions } from 'fastify';

const KiB = 1024;

/**
 * Every route not named below. Their largest legitimate bodies are under 1 KiB, but for a
 * webhook's (POST, PATCH, and a listener's): `url` (2 KiB) and up to 100 event types of up
 * to 100 characters (10 KiB) leave 4 KiB for a `filter`, which is bounded by this alone.
 */
export const DEFAULT_BODY_LIMIT = 16 * KiB;

/**
 * Routes whose schema allows more. A string of 10,000 characters is up to 60 KB of JSON when
 * every character is written as a \u escape (some clients do so for all non-ASCII text).
 */
export const ROUTE_BODY_LIMITS: Readonly<Record<string, number>> = {
  // `command`: a shell script of up to 10,000 characters.
  'POST /api/v1/jobs': 64 * KiB,
  // `content`: a message of up to 10,000 characters.
  'POST /api/v1/agent/threads/:id/messages': 64 * KiB,
  // A tool call of the MCP endpoint: the body of any route above, in a JSON-RPC message.
  'POST /api/v1/mcp': 80 * KiB,
};

export function bodyLimitOf(method: string, url: string): number {
  return ROUTE_BODY_LIMITS[`${method} ${url}`] ?? DEFAULT_BODY_LIMIT;
}

/** Gives every route registered after it (in any context) its body limit, unless it set one. */
export function limitBodies(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = [route.method].flat();
    route.bodyLimit ??= Math.max(...methods.map((method) => bodyLimitOf(method, route.url)));
  });
}

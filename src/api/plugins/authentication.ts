/**
 * Authentication, the per-key rate limit and authorisation, as an onRequest hook of the
 * context every /api/v1 route is registered in (see app.ts). What the hook guards is
 * decided by where a route is registered, never by looking at the URL: the router decodes
 * `%61pi` to `api`, so a check of the raw URL can be spelled around.
 *
 * Authorisation is here too, for every route at once: the route's method and its
 * `config.requires` decide the role and key scope it needs (accounts/roles.ts), so a new
 * route is refused to a viewer and to a read_only key as soon as it writes.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../lib/errors';
import type { ApiContext } from '../context';
import { refusalOf } from '../../accounts/roles';
import { applyRateLimit, RateLimiter } from './rate-limit';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function requireApiKey(api: FastifyInstance, ctx: ApiContext): void {
  const limiter = new RateLimiter(ctx.config.rateLimitPerMinute);
  api.addHook('onRequest', async (request, reply) => {
    const match = BEARER.exec(request.headers.authorization ?? '');
    const principal = match ? await ctx.authenticator.authenticate(match[1]) : null;
    if (principal) request.principal = principal;
    // Counted before the refusal, so guessing keys is limited per client address.
    applyRateLimit(limiter, request, reply);
    if (!principal) {
      throw new ApiError(401, 'unauthorized', match ? 'The API key is not valid, was revoked or has expired.' : 'Send an API key as "Authorization: Bearer <key>".');
    }
    // A path no route answers gets its 404 or 405 whoever asks.
    if (request.is404) return;
    const refusal = refusalOf(principal, request.method, request.routeOptions.config.requires);
    if (refusal) throw new ApiError(403, 'forbidden', refusal);
  });
}

/**
 * Authentication, the per-key rate limit and authorisation, as an onRequest hook of the
 * context every /api/v1 route is registered in (see app.ts). What the hook guards is
 * decided by where a route is registered, never by looking at the URL: the router decodes
 * `%61pi` to `api`, so a check of the raw URL can be spelled around.
 *
 * A caller is an API key (`Authorization: Bearer`) or a console session (its cookie); a
 * request that carries an Authorization header is judged by it alone. Both become the same
 * Principal, so every route, role rule and the rate limit treat them alike. A session's
 * writes also need its CSRF token and are refused from another site, here in onRequest,
 * before any body is read.
 *
 * Authorisation is here too, for every route at once: the route's method and its
 * `config.requires` decide the role and key scope it needs (accounts/roles.ts), so a new
 * route is refused to a viewer and to a read_only key as soon as it writes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, forbidden } from '../../lib/errors';
import type { ApiContext } from '../context';
import { isRead, Principal, refusalOf } from '../../accounts/roles';
import { SESSION_COOKIE } from '../../accounts/sessions';
import { applyRateLimit, RateLimiter, sharedCountsOf } from './rate-limit';
import { warnOfOwnCounts } from '../../store/shared-records';
import { routeConfigOf } from '../route-config';
import { cookieOf } from '../cookies';
import { known } from '../../lib/known';

export const BEARER = /^Bearer\s+(\S+)\s*$/i;
export const CSRF_HEADER = 'x-csrf-token';

export function requireApiKey(api: FastifyInstance, ctx: ApiContext): void {
  const { rateLimitPerMinute, teamRateLimitPerMinute } = ctx.config;
  const onSharedFailure = warnOfOwnCounts(ctx.logger, 'rate limits');
  const limiter = new RateLimiter(rateLimitPerMinute, sharedCountsOf(ctx.shared, rateLimitPerMinute), onSharedFailure);
  const teamLimiter = new RateLimiter(teamRateLimitPerMinute, sharedCountsOf(ctx.shared, teamRateLimitPerMinute), onSharedFailure);
  // Declared, so every request of the context is made with both fields: set on some requests
  // only, each would change the request's shape (a new hidden class) on every request.
  api.decorateRequest('principal', undefined);
  api.decorateRequest('session', undefined);
  /** Who is asking: the key's or the session's caller, or null; a promise only when a lookup must wait. */
  const callerOf = (request: FastifyRequest): Principal | null | Promise<Principal | null> => {
    const authorization = request.headers.authorization;
    if (authorization !== undefined) {
      const match = BEARER.exec(authorization);
      return match ? ctx.authenticator.authenticate(match[1]) : null;
    }
    const cookie = cookieOf(request.headers.cookie, SESSION_COOKIE);
    if (!cookie) return null;
    return ctx.sessions.authenticate(cookie).then((session) => {
      if (session) request.session = session;
      return session?.principal ?? null;
    });
  };

  /** Counts the request, then refuses it (a thrown ApiError) or lets it through. */
  const admit = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null): void | Promise<void> => {
    if (principal) request.principal = principal;
    // Counted before the refusal, so guessing keys is limited per client address.
    const limited = applyRateLimit(limiter, request, reply, teamLimiter);
    if (limited)
      return limited.then(() => {
        judge(request, principal);
      });
    judge(request, principal);
  };

  const judge = (request: FastifyRequest, principal: Principal | null): void => {
    if (!principal) {
      const { authorization } = request.headers;
      throw new ApiError(
        401,
        'unauthorized',
        refusalMessage(authorization, authorization === undefined ? cookieOf(request.headers.cookie, SESSION_COOKIE) : undefined),
      );
    }
    if (request.session) refuseForgedWrite(ctx, request);
    // A path no route answers gets its 404 or 405 whoever asks.
    if (request.is404) return;
    const config = routeConfigOf(request);
    if (config.ownSession) return;
    const refusal = refusalOf(principal, config.judgedPerCall ? 'GET' : request.method, config.requires, config.actsAsWrite);
    if (refusal) throw new ApiError(403, 'forbidden', refusal);
  };

  // The callback form, and all at once for a known key within its limits: an async hook
  // would cost a promise and a microtask on every request.
  api.addHook('onRequest', (request, reply, done) => {
    let admitted: void | Promise<void>;
    try {
      const caller = callerOf(request);
      admitted = caller instanceof Promise ? caller.then((principal) => admit(request, reply, principal)) : admit(request, reply, caller);
    } catch (err) {
      done(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (admitted instanceof Promise)
      admitted.then(() => {
        done();
      }, done);
    else done();
  });
}

function refusalMessage(authorization: string | undefined, cookie: string | undefined): string {
  if (authorization !== undefined) {
    return BEARER.test(authorization) ? 'The API key is not valid, was revoked or has expired.' : 'Send an API key as "Authorization: Bearer <key>".';
  }
  if (cookie) return 'The session has ended (signed out, expired or no longer a member); sign in again.';
  return 'Send an API key as "Authorization: Bearer <key>", or sign in.';
}

/**
 * A browser sends the cookie with any request to the service, also one another site makes
 * it send: a write by cookie must prove it comes from the console (the CSRF token, which
 * only a page of the service can read) and not be marked cross-site by the browser.
 */
function refuseForgedWrite(ctx: ApiContext, request: FastifyRequest): void {
  if (isRead(request.method)) return;
  if (request.headers['sec-fetch-site'] === 'cross-site') throw forbidden('A write from another site is refused.');
  const sent = request.headers[CSRF_HEADER];
  const { token } = known(request.session, 'the session of a request made with the session cookie');
  if (!ctx.sessions.csrfTokenMatches(token, typeof sent === 'string' ? sent : undefined)) {
    throw forbidden("A write made with the session cookie needs the session's X-CSRF-Token header (csrf_token in GET /api/v1/session).");
  }
}

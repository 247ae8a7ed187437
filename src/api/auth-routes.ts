/**
 * The public sign-in routes under /auth (outside /api/v1, no key needed): which sign-in the
 * console offers, the exchange of an API key for a session (only without an identity
 * provider), and the identity provider's redirect flow (src/accounts/oidc.ts). Each makes a
 * session and sets its cookie; everything after that goes to /api/v1 with the cookie.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiContext } from './context';
import { send } from './envelope';
import { ApiError, notFound } from '../lib/errors';
import { applyRateLimit, RateLimiter } from './plugins/rate-limit';
import { BEARER } from './plugins/authentication';
import { cookieOptions, setSessionCookie, viewOfSession } from './routes/session';
import { apiKeyFamily, userFamily, ApiKey, User } from '../resources/accounts';
import { FLOW_COOKIE, FLOW_LIFETIME_MS, OidcSignIn, sameOriginPath, SignInError } from '../accounts/oidc';
import { activeUsersByEmail } from '../accounts/sessions';
import type { ApiApp } from './api-app';

const hidden = { hide: true };

/**
 * The query string as the browser brought it: these hidden routes take whatever the
 * identity provider adds to the callback, so they read it as sent, not through a schema.
 */
function queryOf(request: FastifyRequest): URLSearchParams {
  const at = request.url.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
}

export function registerAuthRoutes(app: ApiApp, ctx: ApiContext): void {
  // Per client address: these routes have no key to count by, and one of them checks keys.
  const limiter = new RateLimiter(ctx.config.rateLimitPerMinute);
  const limit = { onRequest: async (request: FastifyRequest, reply: FastifyReply) => applyRateLimit(limiter, request, reply) };
  // A session's cookie (and, from /auth/session, its CSRF token) is a secret: never cached.
  const secret = { config: { carriesSecret: true } };

  app.get('/auth/config', {
    ...limit,
    schema: hidden,
    handler: async (request, reply) => send(ctx, request, reply, 200, { oidc: ctx.config.oidc !== undefined, api_key_sign_in: ctx.config.oidc === undefined }),
  });

  app.post('/auth/session', {
    ...limit,
    ...secret,
    schema: hidden,
    handler: async (request, reply) => {
      // With an identity provider, people sign in through it: a key is for API clients only.
      if (ctx.config.oidc) throw notFound('route');
      const match = BEARER.exec(request.headers.authorization ?? '');
      const principal = match ? await ctx.authenticator.authenticate(match[1]) : null;
      if (!principal)
        throw new ApiError(
          401,
          'unauthorized',
          match ? 'The API key is not valid, was revoked or has expired.' : 'Send the API key to sign in with as "Authorization: Bearer <key>".',
        );
      const [user, key] = await Promise.all([
        ctx.store.get<User['spec'], User['status']>(userFamily.kind, principal.team, principal.user),
        ctx.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, principal.team, principal.key),
      ]);
      if (!user || !key) throw new ApiError(401, 'unauthorized', 'The API key was revoked while signing in.');
      const token = await ctx.sessions.create(principal.team, user, 'api_key', principal.scope, key.meta.id);
      const session = await ctx.sessions.authenticate(token);
      if (!session) throw new ApiError(401, 'unauthorized', 'The API key was revoked while signing in.');
      setSessionCookie(ctx, reply, token);
      return send(ctx, request, reply, 201, await viewOfSession(ctx, session));
    },
  });

  app.get('/auth/login', {
    ...limit,
    ...secret,
    schema: hidden,
    handler: async (request, reply) => {
      const oidc = providerOf(ctx);
      const { url, flow } = await oidc.begin(sameOriginPath(queryOf(request).get('return_to') ?? undefined));
      // Sent back only to the callback, and only for the few minutes a sign-in may take.
      reply.setCookie(FLOW_COOKIE, oidc.seal(flow), { ...cookieOptions(ctx), path: CALLBACK, maxAge: FLOW_LIFETIME_MS / 1000 });
      return reply.redirect(url, 302);
    },
  });

  app.get(CALLBACK, {
    ...limit,
    ...secret,
    schema: hidden,
    handler: async (request, reply) => {
      const oidc = providerOf(ctx);
      const flow = oidc.open(request.cookies[FLOW_COOKIE]);
      // One use: whatever happens now, the flow is over.
      reply.clearCookie(FLOW_COOKIE, { ...cookieOptions(ctx), path: CALLBACK });
      if (!flow)
        return failedSignIn(
          request,
          reply,
          new SignInError('invalid_request', 'no sign-in in progress in this browser (the flow cookie is missing, expired or was changed)'),
        );
      let email: string;
      try {
        email = await oidc.finish(queryOf(request).toString(), flow);
      } catch (err) {
        if (err instanceof SignInError) return failedSignIn(request, reply, err);
        throw err;
      }
      // The person's oldest membership first; PUT /api/v1/session moves to another.
      const user = (await activeUsersByEmail(ctx.store, email)).at(0);
      if (!user) return failedSignIn(request, reply, new SignInError('invalid_request', 'no active user has this e-mail'), 'no_account');
      const token = await ctx.sessions.create(user.meta.team, user, 'oidc', 'read_write');
      setSessionCookie(ctx, reply, token);
      request.log.info({ user: user.meta.id, team: user.meta.team }, 'signed in through the identity provider');
      return reply.redirect(flow.returnTo, 302);
    },
  });
}

const CALLBACK = '/auth/callback';

function providerOf(ctx: ApiContext): OidcSignIn {
  if (!ctx.oidc) throw notFound('route');
  return ctx.oidc;
}

/** Back to the console, which says why: `/?sign_in_error=<reason>`. */
function failedSignIn(request: FastifyRequest, reply: FastifyReply, err: SignInError, reason: string = err.reason): FastifyReply {
  request.log.warn({ reason, err: err.message }, 'sign-in through the identity provider refused');
  return reply.redirect(`/?sign_in_error=${reason}`, 302);
}

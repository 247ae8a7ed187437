/**
 * The public sign-in routes under /auth (outside /api/v1, no key needed): which sign-in the
 * console offers, the exchange of an API key for a session (only without an identity
 * provider), and the identity provider's redirect flow (src/accounts/oidc.ts). Each makes a
 * session and sets its cookie; everything after that goes to /api/v1 with the cookie.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from './context';
import { send } from './envelope';
import { ApiError, notFound } from '../lib/errors';
import { applyRateLimit, RateLimiter } from './plugins/rate-limit';
import { setSessionCookie, viewOfSession } from './routes/session';
import { apiKeyFamily, userFamily, ApiKey, User } from '../resources/accounts';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const hidden = { hide: true };

export function registerAuthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // Per client address: these routes have no key to count by, and one of them checks keys.
  const limiter = new RateLimiter(ctx.config.rateLimitPerMinute);
  const limit = { onRequest: async (request: Parameters<typeof applyRateLimit>[1], reply: Parameters<typeof applyRateLimit>[2]) => applyRateLimit(limiter, request, reply) };

  app.get('/auth/config', {
    ...limit,
    schema: hidden,
    handler: async (request, reply) => send(ctx, request, reply, 200, { oidc: ctx.config.oidc !== undefined, api_key_sign_in: ctx.config.oidc === undefined }),
  });

  app.post('/auth/session', {
    ...limit,
    schema: hidden,
    handler: async (request, reply) => {
      // With an identity provider, people sign in through it: a key is for API clients only.
      if (ctx.config.oidc) throw notFound('route');
      const match = BEARER.exec(request.headers.authorization ?? '');
      const principal = match ? await ctx.authenticator.authenticate(match[1]) : null;
      if (!principal) throw new ApiError(401, 'unauthorized', match ? 'The API key is not valid, was revoked or has expired.' : 'Send the API key to sign in with as "Authorization: Bearer <key>".');
      const [user, key] = await Promise.all([
        ctx.store.get(userFamily.kind, principal.team, principal.user) as Promise<User>,
        ctx.store.get(apiKeyFamily.kind, principal.team, principal.key) as Promise<ApiKey>,
      ]);
      const token = await ctx.sessions.create(principal.team, user, 'api_key', principal.scope, key.meta.id);
      const session = await ctx.sessions.authenticate(token);
      if (!session) throw new ApiError(401, 'unauthorized', 'The API key was revoked while signing in.');
      setSessionCookie(ctx, reply, token);
      return send(ctx, request, reply, 201, await viewOfSession(ctx, session));
    },
  });
}

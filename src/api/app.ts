/**
 * The Fastify facade: translates /api/v1 calls into reads and writes of resources.
 * Hooks run in this order: request id, authentication, rate limit, then validation and
 * the route; every failure goes through the one error handler.
 */
import Fastify, { FastifyBaseLogger, FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { ApiContext } from './context';
import { registerErrorHandling, sendFrameworkError } from './plugins/errors';
import { documentSharedErrors } from './plugins/error-responses';
import { assignOperationIds, linkOperations, OpenApiDocument } from './plugins/openapi-links';
import { registerValidation } from './plugins/validation';
import { registerObservability, requestIdOf } from './plugins/observability';
import { applyRateLimit, RateLimiter } from './plugins/rate-limit';
import { ApiError } from '../lib/errors';
import { families } from '../resources/registry';
import { registerFamilyRoutes } from './routes/families';
import { registerRouteModules } from './routes';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export interface AppOptions {
  isReady?: () => boolean;
}

export async function buildApp(ctx: ApiContext, options: AppOptions = {}): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    genReqId: (request) => requestIdOf(request.headers['x-request-id']),
    trustProxy: false,
    bodyLimit: 1024 * 1024,
    // Past this, Fastify answers 414 before any hook or schema; Node's 16 KiB header
    // limit bounds the URL anyway, and an id longer than the schema's 64 gets a 422.
    routerOptions: { maxParamLength: 16 * 1024 },
    // A path that is not valid percent-encoding never reaches a route: answer it in the envelope.
    frameworkErrors: (err, request, reply) => sendFrameworkError(ctx, err, request, reply),
  });

  registerValidation(app);
  registerErrorHandling(app, ctx);
  documentSharedErrors(app);
  assignOperationIds(app);
  await app.register(swagger, {
    // Links need every route's operationId, so they are added to the whole document.
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      linkOperations(document.openapiObject as unknown as OpenApiDocument);
      return document.openapiObject;
    },
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Cloudplane API',
        version: 'v1',
        description: 'Managed cloud infrastructure: load balancers, VPN gateways, servers, storage, jobs, agent threads and account settings. See docs/api.md.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, cpk_...' } } },
      security: [{ bearer: [] }],
    },
  });

  registerObservability(app, ctx, options.isReady ?? (() => true));

  const limiter = new RateLimiter(ctx.config.rateLimitPerMinute);
  app.addHook('onRequest', async (request, reply) => {
    const isApi = request.url.startsWith('/api/v1/') || request.url === '/api/v1';
    if (!isApi) return;
    if (request.routeOptions.config?.public) {
      applyRateLimit(limiter, request, reply);
      return;
    }
    const match = BEARER.exec(request.headers.authorization ?? '');
    const principal = match ? await ctx.authenticator.authenticate(match[1]) : null;
    if (principal) request.principal = principal;
    applyRateLimit(limiter, request, reply);
    if (!principal) {
      throw new ApiError(401, 'unauthorized', match ? 'The API key is not valid or was revoked.' : 'Send an API key as "Authorization: Bearer <key>".');
    }
  });

  app.get('/api/v1/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());

  for (const family of families) if (family.standardRoutes !== false) registerFamilyRoutes(app, ctx, family);
  registerRouteModules(app, ctx);
  return app;
}

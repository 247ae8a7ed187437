/**
 * The Fastify facade: translates /api/v1 calls into reads and writes of resources.
 *
 * Two contexts (Fastify's encapsulation): the root holds what every answer needs (request
 * id, metrics, the error handler, validation) and the public routes (/healthz, /readyz,
 * /metrics, /api/v1/openapi.json, the docs page at /docs, sign-in under /auth and the web console at /); a child context holds every other /api/v1 route and the
 * not-found handler, behind its onRequest hooks: load shedding, then authentication and the
 * rate limit. A route is protected by where it is registered, never by a check of its URL.
 * Only the routes that set cookies (sign-in, the session) are in contexts that handle them
 * (api/cookies.ts); every other answer pays nothing for cookies.
 */
import { RequestLog } from './request-log';
import Fastify, { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { ApiApp, TypeBoxTypeProvider } from './api-app';
import swagger from '@fastify/swagger';
import type { ApiContext } from './context';
import { clientErrorHandlerFor, refuseHostless, registerErrorHandler, registerNotFoundHandler, sendFrameworkError } from './plugins/errors';
import { documentSharedErrors } from './plugins/error-responses';
import { describeResponses } from './plugins/response-docs';
import { nameComponents } from './plugins/openapi-components';
import { listNullInNullableEnums } from './plugins/openapi-nullable';
import { requireOperationIds, linkOperations, OpenApiDocument } from './plugins/openapi-links';
import { registerValidation, schemaErrorFormatter } from './plugins/validation';
import { keepSchemaCompilation, SchemaCompilation } from './plugins/schema-compilation';
import { registerDocsPage } from './plugins/docs-page';
import { registerConsole } from './plugins/console';
import { registerObservability, requestIdOf } from './plugins/observability';
import { requireApiKey } from './plugins/authentication';
import { meterRequests } from './plugins/usage-metering';
import { shedLoad } from './plugins/load-shedding';
import { registerIdempotency } from './plugins/idempotency';
import { RouteMethods } from './route-methods';
import { keepRouteConfig } from './route-config';
import { limitBodies } from './body-limits';
import { markSecretAnswers } from './plugins/secret-answers';
import { registerRouteModules } from './routes';
import { registerMcpRoute } from './routes/mcp';
import { agentToolsFor, RouteRules } from './mcp';
import { registerAuthRoutes } from './auth-routes';
import { withCookies } from './cookies';
import { registerS3NotificationRoute } from './s3-notifications';
import type { HttpConfig } from '../config';
import { limitConnections } from './connection-limits';
import { promised } from '../lib/promised';
import { families } from '../resources/registry';
import { publishedFamily } from '../resources/presentation-of';

export interface AppOptions {
  /** Registers every family's routes, its generic ones and its own (src/families/), in the authenticated context. */
  familyRoutes: (api: ApiApp, ctx: ApiContext) => void;
  isReady?: () => boolean;
}

/**
 * Node checks the headers and request timeouts only every connectionsCheckingInterval
 * (30 s by default): check often enough that they bite within a quarter of the shorter one.
 */
const checkingIntervalFor = (http: HttpConfig) => Math.min(1000, Math.max(10, Math.floor(Math.min(http.headersTimeoutMs, http.requestTimeoutMs) / 4)));

/**
 * Every family's names and presentation, in the registry's order, for clients that show
 * them (the web console builds its pages from it; docs/api.md). A vendor extension at the
 * document's root, which @fastify/swagger copies as it is but its types do not name.
 */
const familyExtension = () => ({ 'x-cloudplane-families': families.map(publishedFamily) });

export async function buildApp(ctx: ApiContext, options: AppOptions): Promise<ApiApp> {
  const { http } = ctx.config;
  // Fastify's logger type, not pino's own: the app's type (ApiApp) is written with it.
  const logger: FastifyBaseLogger = ctx.logger;
  const compilation = new SchemaCompilation();
  const app: ApiApp = Fastify({
    loggerInstance: logger,
    logController: new RequestLog(ctx.config.requestLogLevel),
    genReqId: (request) => requestIdOf(request.headers['x-request-id']),
    // A request's child logger only binds its id for the lines it writes: with logging off
    // (level silent) there are none, and making one per request is pure cost.
    childLoggerFactory: (logger, bindings, options) => (logger.level === 'silent' && !options.level ? logger : logger.child(bindings, options)),
    trustProxy: false,
    // Each route's own limit is set by limitBodies (api/body-limits.ts); this is only a ceiling.
    bodyLimit: 1024 * 1024,
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    connectionTimeout: http.idleTimeoutMs,
    // Node would answer a missing Host itself, outside the envelope: refuseHostless does.
    http: { headersTimeout: http.headersTimeoutMs, connectionsCheckingInterval: checkingIntervalFor(http), requireHostHeader: false },
    clientErrorHandler: clientErrorHandlerFor(ctx),
    // maxParamLength: past it, Fastify answers 414 before any hook or schema; Node's 16 KiB
    // header limit bounds the URL anyway, and an id longer than the schema's 64 gets a 422.
    // ignoreTrailingSlash: `/api/v1/regions/` is `/api/v1/regions`, as RouteMethods (which
    // tells 405 from 404) already assumed: a GET there answered "answers GET, not GET".
    routerOptions: { maxParamLength: 16 * 1024, ignoreTrailingSlash: true },
    // A path that is not valid percent-encoding never reaches a route: answer it in the envelope.
    frameworkErrors: (err, request, reply) => {
      sendFrameworkError(ctx, err, request, reply);
    },
    schemaErrorFormatter,
    // Answer serializers compile on first use, as the validators do (plugins/schema-compilation.ts).
    schemaController: { compilersFactory: { buildSerializer: compilation.serializerFactory() } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  keepSchemaCompilation(app, compilation);
  app.server.maxConnections = http.maxConnections;
  limitConnections(app.server, { maxPerAddress: http.maxConnectionsPerAddress, firstRequestTimeoutMs: http.firstRequestTimeoutMs });

  keepRouteConfig(app);
  // Before any route: each gets its body limit and, if its answer holds a secret, no-store.
  limitBodies(app);
  markSecretAnswers(app);
  registerValidation(app, compilation);
  registerErrorHandler(app, ctx);
  // Every route's methods, public ones included, so the not-found handler can answer 405.
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => {
    routes.add(route.url, route.method);
  });
  await app.register(swagger, {
    // Links need every route's operationId, so they are added to the whole document; so are
    // the response descriptions and headers, written once per status rather than on each route,
    // and the named component schemas, once the links have read the inline answers; last,
    // null in every nullable enum, which @fastify/swagger leaves out.
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      listNullInNullableEnums(nameComponents(describeResponses(linkOperations(document.openapiObject as unknown as OpenApiDocument))));
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
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key, cpk_...' },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'cloudplane_session',
            description: 'A console session (sign-in under /auth); writes also need X-CSRF-Token.',
          },
        },
      },
      security: [{ bearer: [] }, { session: [] }],
      ...familyExtension(),
    },
  });

  registerObservability(app, ctx, options.isReady ?? (() => true));
  refuseHostless(app);
  await withCookies(app, (signIn) => {
    registerAuthRoutes(signIn, ctx);
  });
  // The S3 endpoint's bucket notifications: guarded by a secret of their own, in a context of their own.
  await registerS3NotificationRoute(app, ctx);
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await registerDocsPage(app);
  await registerConsole(app, ctx.config.consoleDir);

  await app.register(function authenticatedApi(api) {
    // Nothing to wait for, but a throw (a route added twice) is still the registration's rejection.
    return promised(() => {
      shedLoad(api, ctx.config.overload);
      requireApiKey(api, ctx);
      meterRequests(api, ctx);
      registerIdempotency(api, ctx);
      registerNotFoundHandler(api, ctx, routes);
      documentSharedErrors(api);
      requireOperationIds(api);
      // Before the routes, so the MCP tools a caller is shown know what each route requires.
      const rules = new RouteRules();
      rules.collect(api);
      api.decorateRequest('agentTools', {
        getter(this: FastifyRequest) {
          return this.principal ? agentToolsFor(api, this, this.principal, rules) : undefined;
        },
      });
      // Before the server waits for its connections to end: a watch never would by itself.
      api.addHook('preClose', () => {
        ctx.watches.close();
      });
      options.familyRoutes(api, ctx);
      registerRouteModules(api, ctx);
      registerMcpRoute(api, rules);
    });
  });
  return app;
}

/**
 * The config of the route a request took (with its `url` and `method`), read once per
 * request and kept on it. Fastify builds a new routeOptions object, a dozen members, on
 * every read of request.routeOptions, and the authentication hook, the request metrics,
 * the envelope's meta and a list's scope each needed it: four objects per request.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

type MatchedRouteConfig = FastifyRequest['routeOptions']['config'];

/** A matched route's config; a request that matched none has no url or method. */
export type RouteConfig = Omit<MatchedRouteConfig, 'url' | 'method'> & Partial<Pick<MatchedRouteConfig, 'url' | 'method'>>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Read through routeConfigOf. */
    routeConfig: RouteConfig | null;
  }
}

/** Declared on every request (a member set on some would give requests two shapes). */
export function keepRouteConfig(app: FastifyInstance): void {
  app.decorateRequest('routeConfig', null);
}

export function routeConfigOf(request: FastifyRequest): RouteConfig {
  return (request.routeConfig ??= request.routeOptions.config);
}

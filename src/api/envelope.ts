/** The response envelope of the spec: `{data, meta}` and `{error, meta}`. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiContext } from './context';

export interface Meta {
  persistence: string;
  provider?: string;
  next_cursor?: string | null;
}

/** meta for a request: persistence always, provider for provider-backed families. */
export function metaFor(ctx: ApiContext, request: FastifyRequest, extra?: Partial<Meta>): Meta {
  // One read of routeOptions: Fastify builds a new object on every read of it.
  const family = request.routeOptions?.config?.family;
  const meta: Meta = { persistence: ctx.store.persistence() };
  if (family) meta.provider = ctx.drivers.health(family);
  return extra === undefined ? meta : Object.assign(meta, extra);
}

export function send(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, statusCode: number, data: unknown, extraMeta?: Partial<Meta>) {
  return reply.code(statusCode).send({ data, meta: metaFor(ctx, request, extraMeta) });
}

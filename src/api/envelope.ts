/** The response envelope of the spec: `{data, meta}` and `{error, meta}`. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from './context';
import { routeConfigOf } from './route-config';

// A type, not an interface: it then fits serializeInput's `{ [key: string]: unknown }`.
export type Meta = {
  persistence: string;
  provider?: string;
  next_cursor?: string | null;
  /** A dry run's answer (dry-run.ts): nothing was changed. */
  dry_run?: boolean;
};

/** The schema of `meta`; a new one per call, as every route's response schema gets its own. */
export const metaSchema = () =>
  Type.Object({
    persistence: Type.String({ enum: ['synced', 'stale', 'unavailable'] }),
    provider: Type.Optional(Type.String({ enum: ['connected', 'degraded', 'unavailable'] })),
    next_cursor: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    dry_run: Type.Optional(Type.Boolean({ description: 'Present and true on the answer of a dry run: nothing was changed.' })),
  });

/** meta for a request: persistence always, provider for provider-backed families. */
export function metaFor(ctx: ApiContext, request: FastifyRequest, extra?: Partial<Meta>): Meta {
  const { family } = routeConfigOf(request);
  const meta: Meta = { persistence: ctx.store.persistence() };
  if (family) meta.provider = ctx.drivers.health(family);
  return extra === undefined ? meta : Object.assign(meta, extra);
}

export function send(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, statusCode: number, data: unknown, extraMeta?: Partial<Meta>) {
  return reply.code(statusCode).send({ data, meta: metaFor(ctx, request, extraMeta) });
}

/** For serialising `meta` on its own, with the compiler the routes' responses use. */
const META_SCHEMA = metaSchema();
const JSON_TYPE = 'application/json; charset=utf-8';
const DATA_OPEN = Buffer.from('{"data":');
const LIST_OPEN = Buffer.from('{"data":[');
const COMMA = Buffer.from(',');

/**
 * The bytes of `meta` without extras, by closing, persistence and provider: a handful of
 * answers every read repeats, serialised once each instead of once per request.
 */
const plainTails = new Map<string, Buffer>();

function metaTail(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, closing: string, extraMeta?: Partial<Meta>): Buffer {
  const meta = metaFor(ctx, request, extraMeta);
  const serialise = () => Buffer.from(`${closing},"meta":${reply.serializeInput(meta, META_SCHEMA)}}`);
  if (extraMeta !== undefined) return serialise();
  const key = `${closing}|${meta.persistence}|${meta.provider ?? ''}`;
  let tail = plainTails.get(key);
  if (!tail) plainTails.set(key, (tail = serialise()));
  return tail;
}

/**
 * `send` for data already serialised by its schema (record-bytes.ts): the same bytes the
 * route's response schema makes of `{data, meta}`, joined instead of made again.
 */
export function sendSerialised(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, statusCode: number, data: Buffer) {
  return reply
    .code(statusCode)
    .type(JSON_TYPE)
    .send(Buffer.concat([DATA_OPEN, data, metaTail(ctx, request, reply, '')]));
}

/**
 * `sendSerialised` for a list: `data` is the array of the serialised items. The body is
 * copied straight into one buffer of its final size, without an array of its parts.
 */
export function sendSerialisedList(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  statusCode: number,
  items: readonly Buffer[],
  extraMeta?: Partial<Meta>,
) {
  const tail = metaTail(ctx, request, reply, ']', extraMeta);
  let length = LIST_OPEN.length + Math.max(0, items.length - 1) * COMMA.length + tail.length;
  for (let i = 0; i < items.length; i++) length += items[i].length;
  const body = Buffer.allocUnsafe(length);
  let at = LIST_OPEN.copy(body, 0);
  for (let i = 0; i < items.length; i++) {
    if (i > 0) at += COMMA.copy(body, at);
    at += items[i].copy(body, at);
  }
  tail.copy(body, at);
  return reply.code(statusCode).type(JSON_TYPE).send(body);
}

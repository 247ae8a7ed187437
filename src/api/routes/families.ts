/**
 * The generic REST pattern of the spec for one family: list, create, get, update and
 * delete, all derived from the FamilyDefinition. Families add their actions in route
 * modules of their own.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, TSchema } from '@sinclair/typebox';
import type { AnyFamily, Resource } from '../../resources/family';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listQuerySchema, normaliseQuery, paginate } from '../list';
import { conflict, invalidState, notFound, resourceBusy } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { KeyedMutex } from '../../lib/mutex';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Resource id.' }) });

/** The envelope schemas, for the OpenAPI document and fast serialisation. */
export const envelopeOf = (data: TSchema) =>
  Type.Object({
    data,
    meta: Type.Object({
      persistence: Type.String({ enum: ['synced', 'stale', 'unavailable'] }),
      provider: Type.Optional(Type.String({ enum: ['connected', 'degraded', 'unavailable'] })),
      next_cursor: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
  });

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
    request_id: Type.Optional(Type.String()),
  }),
  meta: Type.Object({ persistence: Type.String(), provider: Type.String() }),
});

const errorResponses = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  415: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
  503: ErrorEnvelope,
};

export const principalOf = (request: FastifyRequest) => request.principal!;

/** Reads a resource of the caller's team, or answers `<family>_not_found`. */
export async function findResource<R extends Resource = Resource>(ctx: ApiContext, family: AnyFamily, team: string, id: string): Promise<R> {
  const resource = (await ctx.store.get(family.kind, team, id)) as R | undefined;
  if (!resource || resource.status?.status === 'destroyed') throw notFound(family.name, id);
  return resource;
}

/** Refuses changes to a resource in a transient state, or one that is gone. */
export function assertChangeable(family: AnyFamily, resource: Resource): void {
  const state = resource.status.status;
  if (family.busyStates?.includes(state)) throw resourceBusy(`The ${family.title} is ${state}; try again when it is done.`);
  if (state === 'deleted' || resource.meta.deletionTimestamp) throw invalidState(`The ${family.title} is deleted.`);
}

const uniqueNameLock = new KeyedMutex();

export function registerFamilyRoutes(app: FastifyInstance, ctx: ApiContext, family: AnyFamily): void {
  const base = `/api/v1/${family.path}`;
  const config: { family?: string } = family.providerBacked ? { family: family.name } : {};
  const tags = [family.title];
  const RecordSchema = family.schemas.record;
  const ruleContext = { config: ctx.config };

  app.get(base, {
    config,
    schema: { tags, summary: `List ${family.title}s`, querystring: listQuerySchema(family.states), response: { 200: envelopeOf(Type.Array(RecordSchema)), ...errorResponses } },
    handler: async (request, reply) => {
      const query = normaliseQuery(request.query as Record<string, unknown>);
      const resources = await ctx.store.list<Record<string, unknown>, Resource['status']>(family.kind, principalOf(request).team);
      const rows = resources.map((r) => ({ id: r.meta.id, name: family.nameOf(r.spec), created_at: r.meta.createdAt, status: r.status.status, r }));
      const { page, nextCursor } = paginate(rows, query, ctx.cursorKey);
      return send(ctx, request, reply, 200, page.map((row) => family.toRecord(row.r as Resource)), { next_cursor: nextCursor });
    },
  });

  app.post(base, {
    config,
    schema: { tags, summary: `Create a ${family.title}`, body: family.schemas.create, response: { 201: envelopeOf(RecordSchema), ...errorResponses } },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      const spec = family.specFromCreate(request.body, ruleContext);
      const create = () => ctx.writer.create(family, team, spec, key);
      const resource = family.uniqueNames
        ? await uniqueNameLock.run(`${team}/${family.kind}`, async () => {
            const name = family.nameOf(spec);
            const taken = (await ctx.store.list(family.kind, team)).some(
              (r) => family.nameOf(r.spec) === name && !['deleted', 'destroyed'].includes((r as Resource).status.status),
            );
            if (taken) throw conflict('name_taken', `A ${family.title} named "${name}" already exists in this team.`);
            return create();
          })
        : await create();
      reply.header('Location', `${base}/${resource.meta.id}`);
      return send(ctx, request, reply, 201, family.toRecord(resource));
    },
  });

  app.get(`${base}/:id`, {
    config,
    schema: { tags, summary: `Get a ${family.title}`, params: IdParams, response: { 200: envelopeOf(RecordSchema), ...errorResponses } },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      return send(ctx, request, reply, 200, family.toRecord(await findResource(ctx, family, principalOf(request).team, id)));
    },
  });

  if (family.schemas.update && family.applyUpdate) {
    const applyUpdate = family.applyUpdate;
    app.patch(`${base}/:id`, {
      config,
      schema: { tags, summary: `Update a ${family.title}`, params: IdParams, body: family.schemas.update, response: { 200: envelopeOf(RecordSchema), ...errorResponses } },
      handler: async (request, reply) => {
        const { id } = request.params as { id: string };
        const { team } = principalOf(request);
        await findResource(ctx, family, team, id);
        const updated = await ctx.writer.mutateSpec(family, team, id, (current) => {
          assertChangeable(family, current);
          return applyUpdate(current.spec, request.body, ruleContext);
        });
        return send(ctx, request, reply, 200, family.toRecord(updated));
      },
    });
  }

  if (family.deletable === false) return;

  app.delete(`${base}/:id`, {
    config,
    schema: { tags, summary: `Delete a ${family.title}`, params: IdParams, response: { 200: envelopeOf(RecordSchema), 202: envelopeOf(RecordSchema), ...errorResponses } },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const { team, key } = principalOf(request);
      const resource = await findResource(ctx, family, team, id);
      if (resource.status.status === 'deleted') return send(ctx, request, reply, 200, family.toRecord(resource));
      if (family.busyStates?.includes(resource.status.status)) throw resourceBusy(`The ${family.title} is ${resource.status.status}; try again when it is done.`);
      await ctx.store.requestDeletion(family.kind, team, id);
      const immediate = family.deletion === 'immediate';
      const deleted = await ctx.writer.mutateStatus(
        family,
        team,
        id,
        (current) => {
          if (['deleted', 'deleting', 'destroyed'].includes(current.status.status)) return null;
          return immediate
            ? { status: 'deleted', deleted_at: nowIso(), operation: null }
            : { status: 'deleting', operation: { name: 'release', started_at: nowIso() } };
        },
        key,
      );
      return send(ctx, request, reply, immediate ? 200 : 202, family.toRecord(deleted));
    },
  });
}

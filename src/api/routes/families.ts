/**
 * The generic REST pattern of the spec for one family: list, create, get, update and
 * delete, all derived from the FamilyDefinition. Families add their actions in route
 * modules of their own.
 */
import type { FastifyRequest } from 'fastify';
import { Type, TSchema } from '@sinclair/typebox';
import type { AnyFamily, Resource } from '../../resources/family';
import type { ApiContext } from '../context';
import { metaSchema, send, sendSerialised, sendSerialisedList } from '../envelope';
import { RecordBytes } from '../record-bytes';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { writeAndAwait } from '../awaiting';
import { conflict, fieldInvalid, invalidState, notFound, providerUnavailable, resourceBusy } from '../../lib/errors';
import type { ExternalRecord } from '../../drivers/types';
import { nowIso } from '../../lib/time';
import { newId } from '../../lib/ids';
import { withNewSecret, withUniqueName } from '../../resources/creation';
import { withinQuota } from '../../resources/quota';
import { ErrorEnvelope } from '../plugins/error-responses';
import { pluralOf, typeNameOf } from '../openapi-names';
import type { ApiApp } from '../api-app';
import { ruleContextOf } from '../../events/catalog';
import { fieldOf, textOf } from '../../lib/unknown-values';
import { known } from '../../lib/known';
import { promised } from '../../lib/promised';
import { IfMatchHeaders, ifMatchOf, tagAnswer, type VersionCheck } from '../entity-tags';
import { isVisible } from '../visible';
import { watchProperties, WatchEvent } from '../watches';
import { DRY_RUN_META, DRY_RUN_PROPERTIES, DryRunQuery, isDryRun, previewSpecChange, sendDryRun } from '../dry-run';
import { recordOf } from '../../resources/record-of';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Resource id.' }) });

/** The envelope schemas, for the OpenAPI document and fast serialisation. */
export const envelopeOf = (data: TSchema) => Type.Object({ data, meta: metaSchema() });

export { ErrorEnvelope };

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

/** The schema parts of a change of one resource (an update, a deletion, an action): the If-Match header, and its 412. */
export const VERSIONED_CHANGE = { headers: IfMatchHeaders, preconditionFailed: { 412: ErrorEnvelope } };

/** The answers of a change that takes If-Match: those of any request, and 412 precondition_failed. */
const changeErrorResponses = { ...errorResponses, ...VERSIONED_CHANGE.preconditionFailed };

export const principalOf = (request: FastifyRequest) => known(request.principal, 'the principal (authentication sets it before any handler runs)');

/** The team's resource the API shows under `id`, read at once (Store.peek); not found otherwise. */
export function visibleResource<R extends Resource = Resource>(ctx: ApiContext, family: AnyFamily, team: string, id: string): Resource<R['spec'], R['status']> {
  const resource = ctx.store.peek<R['spec'], R['status']>(family.kind, team, id);
  if (!resource || !isVisible(resource)) throw notFound(family.name, id);
  return resource;
}

/** `visibleResource` as a promise, its not-found a rejection. */
export const findResource = <R extends Resource = Resource>(
  ctx: ApiContext,
  family: AnyFamily,
  team: string,
  id: string,
): Promise<Resource<R['spec'], R['status']>> => promised(() => visibleResource<R>(ctx, family, team, id));

/** What a change of one resource (an update, a deletion, an action) works on. */
export interface ResourceChange<R extends Resource> {
  /** The resource as findResource reads it. */
  found: Resource<R['spec'], R['status']>;
  /**
   * The request's If-Match (docs/api.md, Versions), judged on `found` already; given to the
   * write, which judges each version it reads. Undefined without the header.
   */
  ifMatch: VersionCheck | undefined;
}

/** The caller's resource `id` for a change, refused with 412 when If-Match no longer holds. */
export async function findForChange<R extends Resource = Resource>(
  ctx: ApiContext,
  family: AnyFamily,
  request: FastifyRequest,
  id: string,
): Promise<ResourceChange<R>> {
  const ifMatch = ifMatchOf(request, family.title);
  const found = await findResource<R>(ctx, family, principalOf(request).team, id);
  ifMatch?.(found);
  return { found, ifMatch };
}

/** The team's objects of a family that the API shows. */
export async function listVisible<R extends Resource = Resource>(ctx: ApiContext, kind: string, team: string): Promise<Resource<R['spec'], R['status']>[]> {
  return (await ctx.store.list<R['spec'], R['status']>(kind, team)).filter(isVisible);
}

/** Refuses changes to a resource in a transient state, or one that is gone. */
export function assertChangeable(family: AnyFamily, resource: Resource): void {
  const state = resource.status.status;
  if (family.busyStates?.includes(state)) throw resourceBusy(`The ${family.title} is ${state}; try again when it is done.`);
  if (state === 'deleted' || resource.meta.deletionTimestamp) throw invalidState(`The ${family.title} is deleted.`);
}

export type SpecUpdate<R extends Resource = Resource> = (extra?: (current: Resource) => Record<string, unknown>) => Promise<R>;

/** Takes the family's write-only secret field out of a request body. */
function splitSecret(family: AnyFamily, body: Record<string, unknown>): { body: Record<string, unknown>; secret?: string } {
  const field = family.secret?.field;
  // The body was validated against the family's create or update schema: always an object.
  if (!field || !(field in body)) return { body };
  const { [field]: secret, ...rest } = body;
  // The family's body schema validated it as a string.
  return { body: rest, secret: typeof secret === 'string' ? secret : undefined };
}

/** Replaces the secret and bumps the spec's version of it; a refused update puts the old secret back. */
export async function rotateSecret<R extends Resource>(
  ctx: ApiContext,
  family: AnyFamily,
  team: string,
  id: string,
  value: string,
  update: SpecUpdate<R>,
): Promise<R> {
  const secret = known(family.secret, `the secret of a ${family.title} (only a family with one rotates it)`);
  return withSecret(ctx, team, secret.secretName(id), value, () =>
    update((current) => ({ [secret.versionField]: Number(fieldOf(current.spec, secret.versionField) ?? 0) + 1 })),
  );
}

/**
 * Puts a store secret, then makes the write that says it is due (a spec naming its new
 * version): the driver never reads a version whose secret is not there. A refused write
 * puts the earlier secret back, or removes the new one.
 */
export async function withSecret<T>(ctx: ApiContext, team: string, name: string, value: string, write: () => Promise<T>): Promise<T> {
  const previous = await ctx.store.secrets.get(team, name);
  await ctx.store.secrets.put(team, name, { value });
  try {
    return await write();
  } catch (err) {
    if (previous) await ctx.store.secrets.put(team, name, previous);
    else await ctx.store.secrets.delete(team, name);
    throw err;
  }
}

/** Refuses the deletion of a resource that another one, not deleted, still lists (a file share attached to a server). */
async function assertUnreferenced(ctx: ApiContext, family: AnyFamily, team: string, id: string): Promise<void> {
  const ref = family.referencedBy;
  if (!ref) return;
  const users = (await listVisible<Resource<Record<string, unknown>>>(ctx, ref.kind, team)).filter((r) => {
    const listed = r.spec[ref.field];
    return r.status.status !== 'deleted' && !r.meta.deletionTimestamp && Array.isArray(listed) && listed.includes(id);
  });
  if (users.length > 0) {
    throw resourceBusy(`The ${family.title} is attached to ${ref.title} ${users.map((r) => r.meta.id).join(', ')}; detach it first.`);
  }
}

const FORCE_PROPERTIES = {
  force: Type.Optional(Type.Boolean({ description: "Delete what the resource still holds (a bucket's objects) with it, instead of answering 409." })),
};

/**
 * Refuses a delete that would destroy data the resource still holds (the family's
 * deletionGuard), asking its driver; a driver that cannot be asked refuses it too (503),
 * as nothing can say the data is not there.
 */
async function assertNothingHeld(ctx: ApiContext, family: AnyFamily, resource: Resource): Promise<void> {
  const guard = family.deletionGuard;
  if (!guard) return;
  const { meta, status } = resource;
  let holds: boolean;
  try {
    holds = await ctx.drivers.holdsData(family.name, { id: meta.id, team: meta.team, external: (status as { external?: ExternalRecord }).external ?? null });
  } catch (err) {
    throw providerUnavailable(family.title, textOf(err));
  }
  if (holds) throw conflict(guard.code, guard.message);
}

/** What a deletion leads to, shown should the reconciler not have written it yet (awaiting.ts). */
function projectedDeletion(resource: Resource, immediate: boolean): Resource {
  const status = immediate ? { status: 'deleted', deleted_at: nowIso() } : { status: 'deleting' };
  return { ...resource, status: { ...resource.status, ...status } };
}

/** The record with the family's secret, for an answer that shows it once (SecretField.shownOnCreate). */
export function withShownSecret(family: AnyFamily): TSchema {
  const secret = family.secret;
  if (!secret?.shownOnCreate) return family.schemas.record;
  return Type.Object(
    // Absent from a dry run's answer: the real create makes the secret anew.
    { ...family.schemas.record.properties, [secret.field]: Type.Optional(Type.String({ description: `${secret.shownOnCreate} Absent with dry_run.` })) },
    { additionalProperties: false },
  );
}

/** What every generic route of a family is named and tagged by, the same for its reads and its changes. */
function familyRouteNames(family: AnyFamily) {
  const config: { family?: string } = family.providerBacked ? { family: family.name } : {};
  return {
    base: `/api/v1/${family.path}`,
    config,
    tags: [family.title],
    typeName: typeNameOf(family.title),
    RecordSchema: family.schemas.record,
  };
}

/**
 * The generic list and get of a family, each with its watch (watches.ts): the whole of a
 * family's reads, also for a family whose changes have routes of their own
 * (FamilyDefinition.standardRoutes 'reads').
 */
export function registerFamilyReads(app: ApiApp, ctx: ApiContext, family: AnyFamily): void {
  const { base, config, tags, typeName, RecordSchema } = familyRouteNames(family);
  // Reads answer records serialised once per stored version.
  const records = new RecordBytes(family);

  const watch = watchProperties(ctx.config.watches);
  /** A 200 that is a JSON envelope, or with watch=true a stream of the changes. */
  const orWatched = (envelope: TSchema, what: string) => ({
    description: `${what}; with watch=true, text/event-stream: the changes (docs/api.md, Watching changes).`,
    content: { 'application/json': { schema: envelope }, 'text/event-stream': { schema: WatchEvent } },
  });

  app.get(base, {
    config,
    schema: {
      tags,
      operationId: `list${pluralOf(typeName)}`,
      summary: `List ${pluralOf(family.title)}`,
      description: `Newest first by default; \`status\` lists those in one state only. With watch=true, the ${pluralOf(family.title)} of the team as they are, then every change as it happens, as server-sent events; no paging or filter.`,
      querystring: listQuerySchema(family.states, watch),
      response: { 200: orWatched(envelopeOf(Type.Array(RecordSchema)), 'A page of the list'), ...errorResponses },
    },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      if (request.query.watch === true) {
        // A watch streams the whole family: a page or filter asked for with it would be silently dropped.
        const given = new URLSearchParams(request.url.slice(request.url.indexOf('?') + 1));
        const paging = ['cursor', 'limit', 'status', 'sort', 'order'].find((name) => given.has(name));
        if (paging) throw fieldInvalid(paging, 'is not taken with watch=true: a watch streams every resource of the family');
        ctx.watches.open({ request, reply, family, team, heldBy: key, timeoutSeconds: request.query.timeout_seconds });
        return;
      }
      const { page, nextCursor } = await listPage(ctx.store, family, team, listQueryOf(request), ctx.cursorKey);
      return sendSerialisedList(
        ctx,
        request,
        reply,
        200,
        page.map((r) => records.of(r, reply)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${base}/:id`, {
    config,
    schema: {
      tags,
      operationId: `get${typeName}`,
      summary: `Get a ${family.title}`,
      description: `With watch=true, the ${family.title} as it is, then every change as it happens, as server-sent events.`,
      params: IdParams,
      querystring: Type.Object(watch, { additionalProperties: false }),
      response: { 200: orWatched(envelopeOf(RecordSchema), `The ${family.title}`), ...errorResponses },
    },
    // Nothing to wait for: the resource is read from memory, its bytes kept (record-bytes.ts); a not-found throws, which Fastify sends.
    handler: (request, reply) => {
      const { team, key } = principalOf(request);
      const resource = visibleResource(ctx, family, team, request.params.id);
      if (request.query.watch === true) {
        ctx.watches.open({ request, reply, family, team, heldBy: key, id: resource.meta.id, timeoutSeconds: request.query.timeout_seconds });
        return;
      }
      tagAnswer(reply, resource);
      sendSerialised(ctx, request, reply, 200, records.of(resource, reply));
    },
  });
}

export function registerFamilyRoutes(app: ApiApp, ctx: ApiContext, family: AnyFamily): void {
  registerFamilyReads(app, ctx, family);
  const { base, config, tags, typeName, RecordSchema } = familyRouteNames(family);
  const ruleContext = ruleContextOf(ctx.config);

  app.post(base, {
    config,
    schema: {
      tags,
      operationId: `create${typeName}`,
      summary: `Create a ${family.title}`,
      querystring: DryRunQuery,
      body: family.schemas.create,
      response: { 201: envelopeOf(withShownSecret(family)), ...errorResponses },
    },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      const { body, secret: given } = splitSecret(family, request.body);
      const made = family.specFromCreate(body, ruleContext);
      const spec = family.resolveCreate ? await family.resolveCreate(made, team, ctx.store) : made;
      const id = newId(family.idPrefix);
      if (request.query.dry_run === true) {
        // Quota and name judged as for a create (a reservation held only while judged); no secret kept, nothing written.
        const preview = await withinQuota(ctx.quota, family, team, id, () =>
          withUniqueName(ctx.store, family, team, spec, undefined, () => Promise.resolve(ctx.writer.preview(family, team, spec, key, id))),
        );
        return sendDryRun(ctx, request, reply, family, preview, 201);
      }
      const secret = given ?? family.secret?.generate?.(spec) ?? undefined;
      const resource = await withinQuota(ctx.quota, family, team, id, () =>
        withUniqueName(ctx.store, family, team, spec, undefined, () =>
          withNewSecret(ctx.store, family, team, id, spec, secret, () => ctx.writer.create(family, team, spec, key, id)),
        ),
      );
      reply.header('Location', `${base}/${resource.meta.id}`);
      tagAnswer(reply, resource);
      const record = recordOf(family, resource);
      const shown = family.secret?.shownOnCreate && secret !== undefined ? { [family.secret.field]: secret } : {};
      return send(ctx, request, reply, 201, { ...record, ...shown });
    },
  });

  if (family.schemas.update && family.applyUpdate) {
    const applyUpdate = family.applyUpdate.bind(family);
    app.patch(`${base}/:id`, {
      config,
      schema: {
        tags,
        operationId: `update${typeName}`,
        summary: `Update a ${family.title}`,
        params: IdParams,
        headers: VERSIONED_CHANGE.headers,
        querystring: DryRunQuery,
        body: family.schemas.update,
        response: { 200: envelopeOf(RecordSchema), ...changeErrorResponses },
      },
      handler: async (request, reply) => {
        const { id } = request.params;
        const { team, key } = principalOf(request);
        const { body, secret } = splitSecret(family, request.body);
        const { found, ifMatch } = await findForChange(ctx, family, request, id);
        assertChangeable(family, found);
        if (request.query.dry_run === true) {
          // The spec the write would carry; the status stays as it is until the reconciler acts, as for real.
          const after = previewSpecChange(found, (current) => applyUpdate(current.spec, body, ruleContext));
          return sendDryRun(ctx, request, reply, family, after);
        }
        const update: SpecUpdate = (extra = () => ({})) =>
          ctx.writer.mutateSpec(
            family,
            team,
            id,
            (current) => {
              assertChangeable(family, current);
              return { ...applyUpdate(current.spec, body, ruleContext), ...extra(current) };
            },
            key,
            ifMatch,
          );
        const updated = secret === undefined ? await update() : await rotateSecret(ctx, family, team, id, secret, update);
        tagAnswer(reply, updated);
        return send(ctx, request, reply, 200, recordOf(family, updated));
      },
    });
  }

  if (family.deletable === false) return;

  app.delete(`${base}/:id`, {
    config,
    schema: {
      tags,
      operationId: `delete${typeName}`,
      summary: `Delete a ${family.title}`,
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: Type.Object({ ...DRY_RUN_PROPERTIES, ...(family.deletionGuard ? FORCE_PROPERTIES : {}) }),
      response: { 200: envelopeOf(RecordSchema), 202: envelopeOf(RecordSchema), ...changeErrorResponses },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      // Only families with a deletion guard take `?force` (FORCE_PROPERTIES validated it as a boolean).
      const force = fieldOf(request.query, 'force') === true;
      const dryRun = isDryRun(request);
      const { team, key } = principalOf(request);
      const { found: resource, ifMatch } = await findForChange(ctx, family, request, id);
      if (resource.status.status === 'deleted') return send(ctx, request, reply, 200, recordOf(family, resource), dryRun ? DRY_RUN_META : undefined);
      if (family.busyStates?.includes(resource.status.status))
        throw resourceBusy(`The ${family.title} is ${resource.status.status}; try again when it is done.`);
      await assertUnreferenced(ctx, family, team, id);
      if (!force) await assertNothingHeld(ctx, family, resource);
      const immediate = family.deletion === 'immediate';
      if (dryRun) return sendDryRun(ctx, request, reply, family, projectedDeletion(resource, immediate), immediate ? 200 : 202);
      // The reconciler moves it to deleted (or deleting) and names the caller in the event.
      const leaving = ['deleted', 'deleting', 'destroyed'];
      const moved = await writeAndAwait<Resource>(
        ctx.store,
        family.kind,
        team,
        id,
        () => ctx.writer.requestDeletion(family, team, id, key, ifMatch),
        (r) => leaving.includes(r.status.status),
      );
      const deleted = moved && moved.status.status !== 'destroyed' ? moved : projectedDeletion(resource, immediate);
      if (moved) tagAnswer(reply, moved);
      return send(ctx, request, reply, immediate ? 200 : 202, recordOf(family, deleted));
    },
  });
}

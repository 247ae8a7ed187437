/**
 * Settings: the caller's profile, the team, and the team's API keys. Profile and team
 * have no reconciler, so an update settles its own configuration hash in the same
 * request, which emits `profile.updated` / `team.updated` with the caller as actor.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listQueryOf, listQuerySchema, paginate } from '../list';
import { typeNameOf } from '../openapi-names';
import { envelopeOf, ErrorEnvelope, listVisible, principalOf } from './families';
import { apiKeyFamily, teamFamily, userFamily, ApiKey } from '../../resources/accounts';
import type { AnyFamily, Resource } from '../../resources/family';
import { configHash } from '../../resources/transitions';
import { sameJson } from '../../lib/canonical-json';
import { findApiKey } from '../../accounts/authenticator';
import { notFound } from '../../lib/errors';
import { withinQuota } from '../../resources/quota';

const errors = { 401: ErrorEnvelope, 404: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };
const KeyIdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const NewKeyRecord = Type.Object({
  ...apiKeyFamily.schemas.record.properties,
  key: Type.String({ description: 'The full API key. Shown in this response only; store it now.' }),
});

async function updateAccount(ctx: ApiContext, family: AnyFamily, team: string, id: string, patch: Record<string, unknown>, actor: string): Promise<Resource> {
  await ctx.writer.mutateSpec(family, team, id, (current) => {
    const spec = family.applyUpdate!(current.spec, patch, { config: ctx.config });
    return sameJson(spec, current.spec) ? null : spec;
  });
  return ctx.writer.mutateStatus(
    family,
    team,
    id,
    (current) => {
      const hash = configHash(family, current.spec);
      return hash === current.status.observed_config ? null : { observed_config: hash, observed_generation: current.meta.generation };
    },
    actor,
  );
}

async function readAccount(ctx: ApiContext, family: AnyFamily, team: string, id: string): Promise<Resource> {
  const resource = await ctx.store.get(family.kind, team, id);
  if (!resource) throw notFound(family.name, id);
  return resource as Resource;
}

/** GET and PATCH of a singleton settings record: the profile or the team. */
function registerSingleton(app: FastifyInstance, ctx: ApiContext, family: AnyFamily, idOf: (p: { team: string; user: string }) => string): void {
  const url = `/api/v1/${family.path}`;
  const tags = ['settings'];
  app.get(url, {
    schema: { tags, operationId: `get${typeNameOf(family.title)}`, summary: `Get the ${family.title}`, response: { 200: envelopeOf(family.schemas.record), ...errors } },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      return send(ctx, request, reply, 200, family.toRecord(await readAccount(ctx, family, principal.team, idOf(principal))));
    },
  });
  app.patch(url, {
    schema: { tags, operationId: `update${typeNameOf(family.title)}`, summary: `Update the ${family.title}`, body: family.schemas.update!, response: { 200: envelopeOf(family.schemas.record), ...errors } },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const updated = await updateAccount(ctx, family, principal.team, idOf(principal), request.body as Record<string, unknown>, principal.key);
      return send(ctx, request, reply, 200, family.toRecord(updated));
    },
  });
}

export function registerSettingsRoutes(app: FastifyInstance, ctx: ApiContext): void {
  registerSingleton(app, ctx, userFamily, (p) => p.user);
  registerSingleton(app, ctx, teamFamily, (p) => p.team);

  const keys = `/api/v1/${apiKeyFamily.path}`;
  const tags = ['settings'];
  app.get(keys, {
    schema: {
      tags,
      operationId: 'listApiKeys',
      summary: 'List API keys',
      description: 'Keys of the team, without the keys themselves. Revoked keys are listed with status=revoked only.',
      querystring: listQuerySchema(apiKeyFamily.states),
      response: { 200: envelopeOf(Type.Array(apiKeyFamily.schemas.record)), ...errors },
    },
    handler: async (request, reply) => {
      const query = listQueryOf(request);
      const all = await listVisible<ApiKey>(ctx, apiKeyFamily.kind, principalOf(request).team);
      const rows = all.map((k) => ({ id: k.meta.id, name: k.spec.name, created_at: k.meta.createdAt, status: k.status.status, k }));
      const { page, nextCursor } = paginate(rows, query, ctx.cursorKey, ['revoked']);
      return send(ctx, request, reply, 200, page.map((row) => apiKeyFamily.toRecord(row.k as ApiKey)), { next_cursor: nextCursor });
    },
  });

  app.post(keys, {
    schema: {
      tags,
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description: 'The response holds the full key in `key`, once; only a hash of it is kept.',
      body: apiKeyFamily.schemas.create,
      response: { 201: envelopeOf(NewKeyRecord), ...errors },
    },
    handler: async (request, reply) => {
      const { team, user, key: actor } = principalOf(request);
      const { name } = request.body as { name: string };
      const { key, token } = await withinQuota(ctx.store, ctx.config.quotas, apiKeyFamily, team, undefined, () => ctx.authenticator.issue(team, user, name, actor));
      reply.header('Location', `${keys}/${key.meta.id}`);
      return send(ctx, request, reply, 201, { ...apiKeyFamily.toRecord(key), key: token });
    },
  });

  app.delete(`${keys}/:id`, {
    schema: { tags, operationId: 'revokeApiKey', summary: 'Revoke an API key', description: 'The key is refused from the next request on. Answers 204.', params: KeyIdParams, response: { 204: Type.Null(), ...errors } },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const { team, key: actor } = principalOf(request);
      await findApiKey(ctx.store, team, id);
      await ctx.authenticator.revoke(team, id, actor);
      return reply.code(204).send();
    },
  });
}

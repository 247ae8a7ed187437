/**
 * Teams of the installation: made and listed by an installation admin (an owner or admin
 * of the first team, accounts/installation.ts), through the API, so that cluster mode,
 * where no offline command reaches the store, can have more than one team. A new team
 * comes with its owner and the owner's first key, shown once in the answer.
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, Team, User } from '../../resources/accounts';
import { createTeam } from '../../accounts/bootstrap';
import { displayNameOf } from '../../accounts/members';
import { notFound } from '../../lib/errors';
import type { ApiApp } from '../api-app';
import { recordOf } from '../../resources/record-of';

const TEAMS = '/api/v1/teams';
const tags = ['teams'];
const installationAdmin = { requires: 'installation_admin' as const };
const errors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };

const NewTeamBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'Team name.' }),
    owner_email: Type.String({ format: 'email', maxLength: 254, description: "The owner's e-mail address." }),
    owner_name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: "The owner's display name; default the part of the e-mail before the @." }),
    ),
  },
  { additionalProperties: false },
);

const NewTeamRecord = Type.Object({
  ...teamFamily.schemas.record.properties,
  owner: userFamily.schemas.record,
  api_key: Type.Object({
    ...apiKeyFamily.schemas.record.properties,
    key: Type.String({ description: "The owner's first API key. Shown in this response only; hand it to the owner now." }),
  }),
});

export function registerTeamRoutes(app: ApiApp, ctx: ApiContext): void {
  app.post(TEAMS, {
    config: installationAdmin,
    schema: {
      tags,
      operationId: 'createTeam',
      summary: 'Create a team',
      description: "Creates a team, its owner and the owner's first API key (in `api_key.key`, shown once). Installation admins only.",
      body: NewTeamBody,
      response: { 201: envelopeOf(NewTeamRecord), ...errors },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const input = { teamName: body.name, ownerEmail: body.owner_email, ownerName: body.owner_name ?? displayNameOf(body.owner_email), keyName: 'owner' };
      const made = await createTeam(ctx.writer, ctx.authenticator, input, undefined, principalOf(request).key);
      const [team, owner, key] = await Promise.all([
        ctx.store.get<Team['spec'], Team['status']>(teamFamily.kind, made.teamId, made.teamId),
        ctx.store.get<User['spec'], User['status']>(userFamily.kind, made.teamId, made.userId),
        ctx.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, made.teamId, made.keyId),
      ]);
      if (!team || !owner || !key) throw new Error(`team ${made.teamId} was removed while it was being made`);
      reply.header('Location', `${TEAMS}/${made.teamId}`);
      return send(ctx, request, reply, 201, {
        ...recordOf(teamFamily, team),
        owner: recordOf(userFamily, owner),
        api_key: { ...recordOf(apiKeyFamily, key), key: made.token },
      });
    },
  });

  app.get(TEAMS, {
    config: installationAdmin,
    schema: {
      tags,
      operationId: 'listTeams',
      summary: 'List teams',
      description: 'Every team of the installation. Installation admins only.',
      querystring: listQuerySchema(teamFamily.states),
      response: { 200: envelopeOf(Type.Array(teamFamily.schemas.record)), ...errors },
    },
    handler: async (request, reply) => {
      const { page, nextCursor } = await listPage(ctx.store, teamFamily, undefined, listQueryOf(request), ctx.cursorKey);
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((t) => recordOf(teamFamily, t)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${TEAMS}/:id`, {
    config: installationAdmin,
    schema: {
      tags,
      operationId: 'getTeamById',
      summary: 'Get a team',
      description: 'Any team of the installation. Installation admins only; a team reads its own with GET /api/v1/settings/team.',
      params: Type.Object({ id: Type.String({ maxLength: 64, description: 'Team id, team_...' }) }),
      response: { 200: envelopeOf(teamFamily.schemas.record), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const team = await ctx.store.get<Team['spec'], Team['status']>(teamFamily.kind, id, id);
      if (!team) throw notFound('team', id);
      return send(ctx, request, reply, 200, recordOf(teamFamily, team));
    },
  });
}

/**
 * Settings: the caller's profile, the team, its members and its API keys. Who may call
 * which route is decided for every route by the authentication hook (accounts/roles.ts):
 * reads need a viewer, writes a member, and routes that manage the team or its members
 * say `requires: 'admin'`. What depends on the member touched is in accounts/members.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { typeNameOf } from '../openapi-names';
import { envelopeOf, ErrorEnvelope, principalOf, VERSIONED_CHANGE } from './families';
import { ifMatchOf, tagAnswer } from '../entity-tags';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, ApiKeyCreate, ROLES, Team, User } from '../../resources/accounts';
import type { AnyFamily, Resource } from '../../resources/family';
import { findApiKey } from '../../accounts/authenticator';
import { changeRole, findMember, inviteMember, mayActFor, removeMember, updateAccount } from '../../accounts/members';
import { atLeast, Principal, Requirement } from '../../accounts/roles';
import { fieldInvalid, forbidden, notFound } from '../../lib/errors';
import { withinQuota } from '../../resources/quota';
import { newId } from '../../lib/ids';
import { hasPassed } from '../../lib/timestamps';
import { StringEnum } from '../../resources/schema-kit';
import { InvitationMailer } from '../../accounts/invitations';
import type { ApiApp } from '../api-app';
import { known } from '../../lib/known';
import { recordOf } from '../../resources/record-of';

const errors = { 401: ErrorEnvelope, 404: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };
/** A change of one record answers 412 too, when If-Match no longer holds. */
const changeErrors = { ...errors, ...VERSIONED_CHANGE.preconditionFailed };
const KeyIdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const MemberIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Member (user) id, usr_...' }) });
const RoleSchema = StringEnum(ROLES, { description: 'owner, admin, member or viewer.' });
const Invitation = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254, description: 'E-mail address of the member.' }),
    role: RoleSchema,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Display name; default the part of the e-mail before the @.' })),
  },
  { additionalProperties: false },
);
const RoleChange = Type.Object({ role: RoleSchema }, { additionalProperties: false });
const NewKeyRecord = Type.Object({
  ...apiKeyFamily.schemas.record.properties,
  key: Type.String({ description: 'The full API key. Shown in this response only; store it now.' }),
});

async function readAccount(ctx: ApiContext, family: AnyFamily, team: string, id: string): Promise<Resource> {
  const resource = await ctx.store.get<Resource['spec'], Resource['status']>(family.kind, team, id);
  if (!resource) throw notFound(family.name, id);
  return resource;
}

/** GET and PATCH of a singleton settings record: the profile or the team. */
function registerSingleton(app: ApiApp, ctx: ApiContext, family: AnyFamily, idOf: (p: Principal) => string, updateRequires?: Requirement): void {
  const url = `/api/v1/${family.path}`;
  const tags = ['settings'];
  app.get(url, {
    schema: {
      tags,
      operationId: `get${typeNameOf(family.title)}`,
      summary: `Get the ${family.title}`,
      response: { 200: envelopeOf(family.schemas.record), ...errors },
    },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const account = await readAccount(ctx, family, principal.team, idOf(principal));
      tagAnswer(reply, account);
      return send(ctx, request, reply, 200, recordOf(family, account));
    },
  });
  app.patch(url, {
    config: { requires: updateRequires },
    schema: {
      tags,
      operationId: `update${typeNameOf(family.title)}`,
      summary: `Update the ${family.title}`,
      headers: VERSIONED_CHANGE.headers,
      body: known(family.schemas.update, `the update schema of a ${family.title}`),
      response: { 200: envelopeOf(family.schemas.record), ...changeErrors },
    },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const ifMatch = ifMatchOf(request, family.title);
      ifMatch?.(await readAccount(ctx, family, principal.team, idOf(principal)));
      const updated = await updateAccount(ctx, family, principal.team, idOf(principal), request.body, principal.key, ifMatch);
      tagAnswer(reply, updated);
      return send(ctx, request, reply, 200, recordOf(family, updated));
    },
  });
}

export function registerSettingsRoutes(app: ApiApp, ctx: ApiContext): void {
  registerSingleton(app, ctx, userFamily, (p) => p.user);
  // A member may not manage the team.
  registerSingleton(app, ctx, teamFamily, (p) => p.team, 'admin');
  registerMemberRoutes(app, ctx);

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
      const { page, nextCursor } = await listPage(ctx.store, apiKeyFamily, principalOf(request).team, query, ctx.cursorKey);
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((k) => recordOf(apiKeyFamily, k)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.post(keys, {
    schema: {
      tags,
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description:
        "The response holds the full key in `key`, once; only a hash of it is kept. `user_id` makes the key for another member (an owner or admin only; an owner's key, an owner only): that is how an invited member gets a first key.",
      body: ApiKeyCreate,
      response: { 201: envelopeOf(NewKeyRecord), ...errors },
    },
    handler: async (request, reply) => {
      const caller = principalOf(request);
      const body = request.body;
      const holder = await keyHolder(ctx, caller, body.user_id);
      if (body.expires_at && hasPassed(body.expires_at)) throw fieldInvalid('expires_at', 'must be in the future');
      const options = { scope: body.scope, expiresAt: body.expires_at ?? null, id: newId(apiKeyFamily.idPrefix) };
      const issue = () => ctx.authenticator.issue(caller.team, holder, body.name, caller.key, options);
      const { key, token } = await withinQuota(ctx.quota, apiKeyFamily, caller.team, options.id, issue);
      reply.header('Location', `${keys}/${key.meta.id}`);
      return send(ctx, request, reply, 201, { ...recordOf(apiKeyFamily, key), key: token });
    },
  });

  app.delete(`${keys}/:id`, {
    schema: {
      tags,
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description: 'The key is refused from the next request on. Answers 204.',
      params: KeyIdParams,
      response: { 204: Type.Null(), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const caller = principalOf(request);
      await refuseUnlessMayManageKey(ctx, caller, await findApiKey(ctx.store, caller.team, id));
      await ctx.authenticator.revoke(caller.team, id, caller.key);
      return reply.code(204).send(null);
    },
  });

  app.post(`${keys}/:id/rotate`, {
    schema: {
      tags,
      operationId: 'rotateApiKey',
      summary: 'Rotate an API key',
      description:
        'Makes a new key with the same name, holder, scope and expiry, answered once in `key` (201), and revokes the old one: it is refused from the next request on. The new key is made before the old one is revoked, so a failure leaves the old key working. Who may rotate a key is who may revoke it.',
      params: KeyIdParams,
      response: { 201: envelopeOf(NewKeyRecord), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const caller = principalOf(request);
      const old = await findApiKey(ctx.store, caller.team, id);
      await refuseUnlessMayManageKey(ctx, caller, old);
      // No quota check: the team ends with as many keys as it had.
      const options = { scope: old.spec.scope, expiresAt: old.spec.expires_at ?? null };
      const { key, token } = await ctx.authenticator.issue(caller.team, old.spec.user_id, old.spec.name, caller.key, options);
      await ctx.authenticator.revoke(caller.team, id, caller.key);
      reply.header('Location', `${keys}/${key.meta.id}`);
      return send(ctx, request, reply, 201, { ...recordOf(apiKeyFamily, key), key: token });
    },
  });
}

/** Revoking or rotating another member's key needs an owner or admin (an owner's key, an owner). */
async function refuseUnlessMayManageKey(ctx: ApiContext, caller: Principal, key: ApiKey): Promise<void> {
  const holder = await ctx.store.get<User['spec'], User['status']>(userFamily.kind, caller.team, key.spec.user_id);
  const allowed = holder ? mayActFor(caller, holder) : atLeast(caller.role, 'admin');
  if (!allowed) throw forbidden("Only an owner or admin may revoke or rotate another member's key (an owner's key, an owner only).");
}

/** Who a new key is for: the caller, or the member `userId` names when the caller may act for them. */
async function keyHolder(ctx: ApiContext, caller: Principal, userId: string | undefined): Promise<string> {
  if (!userId || userId === caller.user) return caller.user;
  const user = await ctx.store.get<User['spec'], User['status']>(userFamily.kind, caller.team, userId);
  if (!user || user.status.status !== 'active') throw fieldInvalid('user_id', 'is not a member of this team');
  if (!mayActFor(caller, user)) throw forbidden('Only an owner or admin may make a key for another member (for an owner, an owner only).');
  return userId;
}

/** The team's members: listed by anyone in it, managed by owners and admins. */
function registerMemberRoutes(app: ApiApp, ctx: ApiContext): void {
  const members = '/api/v1/settings/team/members';
  const tags = ['settings'];
  // Named Member in the OpenAPI document, apart from the caller's own Profile of the same fields.
  const memberRecord = Type.Object(userFamily.schemas.record.properties, { additionalProperties: false, description: 'A member of the team.' });
  const memberEnvelope = envelopeOf(memberRecord);
  const manage = { requires: 'admin' as const };
  const mailer = new InvitationMailer(ctx.config.webhooks, ctx.logger);
  app.addHook('onClose', () => {
    mailer.close();
  });
  const send200 = (request: FastifyRequest, reply: FastifyReply, user: User) => {
    tagAnswer(reply, user);
    return send(ctx, request, reply, 200, recordOf(userFamily, user));
  };

  app.get(members, {
    schema: {
      tags,
      operationId: 'listMembers',
      summary: 'List team members',
      description: 'Members of the team. Removed members are listed with status=removed only.',
      querystring: listQuerySchema(userFamily.states),
      response: { 200: envelopeOf(Type.Array(memberRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const query = listQueryOf(request);
      const { page, nextCursor } = await listPage(ctx.store, userFamily, principalOf(request).team, query, ctx.cursorKey);
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((u) => recordOf(userFamily, u)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.post(members, {
    config: manage,
    schema: {
      tags,
      operationId: 'inviteMember',
      summary: 'Invite a member',
      description:
        'Adds a user to the team by e-mail with a role (an owner only may add an owner), and e-mails them a notice when the service has an SMTP server. The new member has no key yet: an owner or admin makes one with POST /api/v1/settings/api-keys and `user_id`. 409 name_taken when the e-mail is already a member.',
      body: Invitation,
      response: { 201: memberEnvelope, 403: ErrorEnvelope, 409: ErrorEnvelope, ...errors },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const caller = principalOf(request);
      const user = await inviteMember(ctx, caller, body);
      void notifyInvited(ctx, mailer, caller, user);
      reply.header('Location', `${members}/${user.meta.id}`);
      tagAnswer(reply, user);
      return send(ctx, request, reply, 201, recordOf(userFamily, user));
    },
  });

  app.get(`${members}/:id`, {
    schema: { tags, operationId: 'getMember', summary: 'Get a team member', params: MemberIdParams, response: { 200: memberEnvelope, ...errors } },
    handler: async (request, reply) => send200(request, reply, await findMember(ctx, principalOf(request).team, request.params.id)),
  });

  app.patch(`${members}/:id`, {
    config: manage,
    schema: {
      tags,
      operationId: 'updateMember',
      summary: "Change a member's role",
      description: "An admin may change any role but an owner's, and may not make owners. The last owner cannot be demoted (409 invalid_state).",
      params: MemberIdParams,
      headers: VERSIONED_CHANGE.headers,
      body: RoleChange,
      response: { 200: memberEnvelope, 403: ErrorEnvelope, 409: ErrorEnvelope, ...changeErrors },
    },
    handler: async (request, reply) => {
      const { role } = request.body;
      return send200(request, reply, await changeRole(ctx, principalOf(request), request.params.id, role, ifMatchOf(request, 'member')));
    },
  });

  app.delete(`${members}/:id`, {
    config: manage,
    schema: {
      tags,
      operationId: 'removeMember',
      summary: 'Remove a member',
      description:
        "Answers 200 with the member, now status=removed; the member's keys are revoked. An admin may not remove an owner; the last owner cannot be removed (409 invalid_state).",
      params: MemberIdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: memberEnvelope, 403: ErrorEnvelope, 409: ErrorEnvelope, ...changeErrors },
    },
    handler: async (request, reply) => send200(request, reply, await removeMember(ctx, principalOf(request), request.params.id, ifMatchOf(request, 'member'))),
  });
}

/** E-mails the invited member, without holding up the answer (InvitationMailer never throws). */
async function notifyInvited(ctx: ApiContext, mailer: InvitationMailer, caller: Principal, member: User): Promise<void> {
  const [team, inviter] = await Promise.all([
    ctx.store.get<Team['spec'], Team['status']>(teamFamily.kind, caller.team, caller.team),
    ctx.store.get<User['spec'], User['status']>(userFamily.kind, caller.team, caller.user),
  ]).catch(() => [undefined, undefined]);
  await mailer.invited({
    to: member.spec.email,
    teamId: caller.team,
    teamName: team?.spec.name ?? caller.team,
    role: member.spec.role,
    memberId: member.meta.id,
    invitedBy: inviter?.spec.email ?? 'An admin',
  });
}

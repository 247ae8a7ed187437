/**
 * The caller's console session: GET shows who the caller is (with a key too), PUT chooses
 * another team of the same person, DELETE signs out. The session is made by the public
 * sign-in routes (src/api/auth-routes.ts); the cookie they set is accepted across /api/v1
 * by the authentication hook.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import type { Principal } from '../../accounts/roles';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, principalOf } from './families';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, KEY_SCOPES, ROLES, Team, User } from '../../resources/accounts';
import { ActiveSession, SESSION_COOKIE } from '../../accounts/sessions';
import { withCookies } from '../cookies';
import { ApiError, forbidden } from '../../lib/errors';
import type { ApiApp } from '../api-app';

const SESSION_PATH = '/api/v1/session';
const tags = ['session'];
const errors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope };
const Role = Type.String({ enum: [...ROLES] });
const DateTime = Type.String({ format: 'date-time' });

export const SessionView = Type.Object({
  user: Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }),
  team: Type.Object({ id: Type.String(), name: Type.String() }),
  role: Role,
  scope: Type.String({ enum: [...KEY_SCOPES] }),
  installation_admin: Type.Boolean({
    description: "An admin or owner of the installation's own team: may list and make teams (GET, POST /api/v1/teams).",
  }),
  teams: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: Role }), { description: 'The teams the signed-in person may choose (PUT).' }),
  csrf_token: Type.Optional(Type.String({ description: 'Send as X-CSRF-Token on every write made with the session cookie. Absent when asked with a key.' })),
  expires_at: Type.Union([DateTime, Type.Null()], { description: 'When the session ends however busy (a key: its expiry, or null).' }),
  idle_expires_at: Type.Union([DateTime, Type.Null()], { description: 'When the session ends unless used before (null with a key).' }),
  via: Type.String({
    enum: ['oidc', 'api_key', 'bearer'],
    description: 'oidc: signed in through the identity provider; api_key: a key exchanged for a session; bearer: asked with a key, no session.',
  }),
});

const TeamChoice = Type.Object({ team_id: Type.String({ maxLength: 64, description: "One of the session's `teams`." }) }, { additionalProperties: false });

/** The session view of a cookie session. */
export async function viewOfSession(ctx: ApiContext, session: ActiveSession): Promise<object> {
  const { principal, record, user } = session;
  const teams = await ctx.sessions.teamsOf(session);
  return {
    ...(await identityOf(ctx, principal, user)),
    teams,
    csrf_token: ctx.sessions.csrfTokenOf(session.token),
    expires_at: record.expires_at,
    idle_expires_at: session.idleExpiresAt,
    via: record.via,
  };
}

/** The same view for a caller with a key: no session, so no CSRF token and no idle expiry. */
async function viewOfKey(ctx: ApiContext, principal: Principal): Promise<object> {
  const [user, key] = await Promise.all([
    ctx.store.get<User['spec'], User['status']>(userFamily.kind, principal.team, principal.user),
    ctx.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, principal.team, principal.key),
  ]);
  // Removed since the key was checked: the next request is refused, so is this one.
  if (!user) throw new ApiError(401, 'unauthorized', 'The API key is not valid, was revoked or has expired.');
  const identity = await identityOf(ctx, principal, user);
  return { ...identity, teams: [{ ...identity.team, role: principal.role }], expires_at: key?.spec.expires_at ?? null, idle_expires_at: null, via: 'bearer' };
}

async function identityOf(ctx: ApiContext, principal: Principal, user: User) {
  const team = await ctx.store.get<Team['spec'], Team['status']>(teamFamily.kind, principal.team, principal.team);
  return {
    user: { id: user.meta.id, name: user.spec.name, email: user.spec.email },
    team: { id: principal.team, name: team?.spec.name ?? principal.team },
    role: principal.role,
    scope: principal.scope,
    installation_admin: principal.installationAdmin,
  };
}

/** HttpOnly (no script reads it), SameSite=Lax (no other site's request sends it, but for top-level navigation), Secure behind https. */
export function setSessionCookie(ctx: ApiContext, reply: FastifyReply, token: string): void {
  reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions(ctx), maxAge: Math.floor(ctx.config.sessions.maxAgeMs / 1000) });
}

export function clearSessionCookie(ctx: ApiContext, reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, cookieOptions(ctx));
}

export const cookieOptions = (ctx: ApiContext) => ({
  httpOnly: true,
  sameSite: 'lax' as const,
  path: '/',
  secure: ctx.config.publicUrl?.startsWith('https:') ?? false,
});

/** The session routes set and clear the session cookie: they get a context that can (api/cookies.ts). */
export function registerSessionRoutes(api: ApiApp, ctx: ApiContext): void {
  void withCookies(api, (app) => {
    sessionRoutes(app, ctx);
  });
}

function sessionRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get(SESSION_PATH, {
    schema: {
      tags,
      operationId: 'getSession',
      summary: 'Get the session',
      description: 'Who the caller is: user, team, role, scope, the teams they may choose, and for a session cookie its CSRF token and expiry.',
      response: { 200: envelopeOf(SessionView), ...errors },
    },
    handler: async (request, reply) => {
      const view = request.session ? await viewOfSession(ctx, request.session) : await viewOfKey(ctx, principalOf(request));
      return send(ctx, request, reply, 200, view);
    },
  });

  app.put(SESSION_PATH, {
    config: { ownSession: true },
    schema: {
      tags,
      operationId: 'chooseSessionTeam',
      summary: "Choose the session's team",
      description:
        "Moves a session made through the identity provider to another of the person's teams (one of `teams`); the role is theirs in that team. Cookie sessions only.",
      body: TeamChoice,
      response: { 200: envelopeOf(SessionView), 404: ErrorEnvelope, 422: ErrorEnvelope, ...errors },
    },
    handler: async (request, reply) => {
      const session = request.session;
      if (!session) throw forbidden('A key belongs to its team; only a signed-in session chooses a team.');
      await ctx.sessions.switchTeam(session, request.body.team_id);
      const switched = await ctx.sessions.authenticate(session.token);
      if (!switched) return signedOut(ctx, reply);
      return send(ctx, request, reply, 200, await viewOfSession(ctx, switched));
    },
  });

  app.delete(SESSION_PATH, {
    config: { ownSession: true },
    schema: {
      tags,
      operationId: 'deleteSession',
      summary: 'Sign out',
      description: 'Ends the session: it is deleted server-side, so its cookie is refused from the next request on, and the cookie is cleared. Answers 204.',
      response: { 204: Type.Null(), ...errors },
    },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.session) {
        await ctx.sessions.signOut(request.session);
        ctx.watches.endSession(request.session.record.hash);
      }
      clearSessionCookie(ctx, reply);
      return reply.code(204).send();
    },
  });
}

function signedOut(ctx: ApiContext, reply: FastifyReply): never {
  clearSessionCookie(ctx, reply);
  throw new ApiError(401, 'unauthorized', 'The session ended while choosing a team; sign in again.');
}

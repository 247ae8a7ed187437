/** Account families: the team, its users (the profile) and their API keys. */
import { Type } from '@sinclair/typebox';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import { baseStatusProperties, IdOf, Timestamp, NullableTimestamp, strictObject, StringEnum } from './schema-kit';

/** A member's role in the team (accounts/roles.ts: what each may do). */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** What an API key may do: read_only keys are refused every write. */
export const KEY_SCOPES = ['read_write', 'read_only'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

const TEAM_STATES = ['active'] as const;
/** A removed member keeps its record (and its events) but can no longer act. */
const USER_STATES = ['active', 'removed'] as const;
const KEY_STATES = ['active', 'revoked'] as const;

const TeamName = Type.String({ minLength: 1, maxLength: 100, description: 'Team name.' });
const UserName = Type.String({ minLength: 1, maxLength: 100, description: 'Display name.' });
const Email = Type.String({ format: 'email', maxLength: 254, description: 'E-mail address.' });
const KeyName = Type.String({ minLength: 1, maxLength: 100, description: 'Human-readable name of the key.' });
const RoleSchema = StringEnum(ROLES, { description: 'owner, admin, member or viewer (docs/api.md, "Roles").' });
const ScopeSchema = StringEnum(KEY_SCOPES, {
  description: 'read_write (the default) or read_only: a read_only key is refused every write with 403 forbidden.',
});
const ExpiresAt = NullableTimestamp('When the key stops working (401 from then on); null for never.');

export interface TeamSpec {
  name: string;
  owner_id: string;
}
export type Team = Resource<TeamSpec>;

export interface UserSpec {
  name: string;
  email: string;
  role: Role;
}
export type User = Resource<UserSpec>;

export interface ApiKeySpec {
  name: string;
  user_id: string;
  /** The first characters of the key, to tell keys apart; not enough to use it. */
  prefix: string;
  /** Absent on keys made before scopes existed: those are read_write. */
  scope?: KeyScope;
  expires_at?: string | null;
}
export interface ApiKeyStatus extends BaseStatus {
  revoked_at: string | null;
  /** Written at most once a minute per key (see ApiKeyAuthenticator). */
  last_used_at?: string | null;
}
export type ApiKey = Resource<ApiKeySpec, ApiKeyStatus>;

const stamps = (r: Resource) => ({ created_at: r.meta.createdAt, updated_at: r.meta.updatedAt });
const noStatusFields = () => ({});

export const teamFamily: FamilyDefinition<TeamSpec> = {
  name: 'team',
  title: 'team',
  kind: 'Team',
  plural: 'teams',
  shortNames: ['cpteam'],
  path: 'settings/team',
  idPrefix: 'team',
  states: TEAM_STATES,
  listing: { acrossTeams: true, defaultState: 'active' },
  readyStates: ['active'],
  providerBacked: false,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had its record changed (through the API, or an edit of its custom resource).' },
  standardRoutes: false,
  description: 'A team: the owner of every resource, key and user in it. In Kubernetes, a namespace.',
  schemas: {
    create: strictObject({ name: TeamName }),
    update: strictObject({ name: Type.Optional(TeamName) }),
    spec: strictObject({ name: TeamName, owner_id: IdOf('usr', 'The owner, who receives notices.') }),
    status: strictObject(baseStatusProperties(TEAM_STATES)),
    record: strictObject({
      id: IdOf('team', 'Team id.'),
      name: TeamName,
      owner_id: IdOf('usr', 'The team owner.'),
      created_at: Timestamp('Creation time.'),
      updated_at: Timestamp('Last change.'),
    }),
  },
  specFromCreate: (body: TeamSpec) => ({ name: body.name, owner_id: body.owner_id }),
  applyUpdate: (spec, patch: Partial<TeamSpec>) => ({ ...spec, ...patch }),
  initialStatus: noStatusFields,
  nameOf: (spec) => spec.name,
  toRecord: (team) => ({ id: team.meta.id, name: team.spec.name, owner_id: team.spec.owner_id, ...stamps(team) }),
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'name', label: 'Name' },
      { key: 'owner_id', label: 'Owner' },
      { key: 'created_at', label: 'Created at' },
    ],
  },
};

export const userFamily: FamilyDefinition<UserSpec> = {
  name: 'profile',
  title: 'profile',
  kind: 'User',
  plural: 'users',
  shortNames: ['cpuser'],
  path: 'settings/profile',
  idPrefix: 'usr',
  states: USER_STATES,
  listing: { hiddenStates: ['removed'] },
  readyStates: ['active'],
  providerBacked: false,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had its record changed (through the API, or an edit of its custom resource).' },
  standardRoutes: false,
  description: 'A user of a team; the profile of the caller.',
  schemas: {
    create: strictObject({ name: UserName, email: Email }),
    update: strictObject({ name: Type.Optional(UserName), email: Type.Optional(Email) }),
    spec: strictObject({ name: UserName, email: Email, role: RoleSchema }),
    status: strictObject(baseStatusProperties(USER_STATES)),
    record: strictObject({
      id: IdOf('usr', 'User id.'),
      name: UserName,
      email: Email,
      role: RoleSchema,
      status: Type.String({ enum: [...USER_STATES], description: 'active, or removed once taken out of the team.' }),
      team_id: IdOf('team', 'The team of the user.'),
      created_at: Timestamp('Creation time.'),
      updated_at: Timestamp('Last change.'),
    }),
  },
  // The role is the inviter's to give (accounts/members.ts); without one, a member.
  specFromCreate: (body: CreateBody<UserSpec, 'role'>) => ({ name: body.name, email: body.email, role: body.role ?? 'member' }),
  applyUpdate: (spec, patch: Partial<UserSpec>) => ({ ...spec, ...patch }),
  initialStatus: noStatusFields,
  nameOf: (spec) => spec.name,
  toRecord: (user) => ({
    id: user.meta.id,
    name: user.spec.name,
    email: user.spec.email,
    role: user.spec.role,
    status: user.status.status,
    team_id: user.meta.team,
    ...stamps(user),
  }),
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'name', label: 'Name' },
      { key: 'email', label: 'E-mail' },
      { key: 'role', label: 'Role' },
      { key: 'status', label: 'Status' },
    ],
  },
};

/** The body of POST /api/v1/settings/api-keys. */
export const ApiKeyCreate = strictObject({
  name: KeyName,
  user_id: Type.Optional(
    IdOf('usr', "The member the key acts for; default the caller. Another member's key needs an owner or admin (an owner's key, an owner)."),
  ),
  scope: Type.Optional(ScopeSchema),
  expires_at: Type.Optional(ExpiresAt),
});

export const apiKeyFamily: FamilyDefinition<ApiKeySpec, ApiKeyStatus> = {
  name: 'api_key',
  quota: { default: 100, releasedIn: ['revoked'] },
  title: 'API key',
  kind: 'ApiKey',
  plural: 'apikeys',
  shortNames: ['cpkey'],
  path: 'settings/api-keys',
  idPrefix: 'key',
  states: KEY_STATES,
  listing: { hiddenStates: ['revoked'] },
  readyStates: ['active'],
  providerBacked: false,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had its record changed (through the API, or an edit of its custom resource).' },
  standardRoutes: false,
  description: 'An API key of a user. Only a hash of the key is kept, in a Secret; the key itself is shown once.',
  schemas: {
    create: ApiKeyCreate,
    spec: strictObject({
      name: KeyName,
      user_id: IdOf('usr', 'The user the key acts for.'),
      prefix: Type.String({ description: 'First characters of the key, to tell keys apart.' }),
      scope: Type.Optional(ScopeSchema),
      expires_at: Type.Optional(ExpiresAt),
    }),
    status: strictObject({
      ...baseStatusProperties(KEY_STATES),
      revoked_at: NullableTimestamp('When the key was revoked.'),
      last_used_at: Type.Optional(NullableTimestamp('When the key was last used, to the minute.')),
    }),
    record: strictObject({
      id: IdOf('key', 'API key id.'),
      name: KeyName,
      prefix: Type.String({ description: 'First characters of the key, to tell keys apart.' }),
      status: Type.String({ enum: [...KEY_STATES], description: 'active or revoked.' }),
      user_id: IdOf('usr', 'The user the key acts for.'),
      scope: ScopeSchema,
      expires_at: ExpiresAt,
      last_used_at: NullableTimestamp('When the key was last used, to the minute; null if never.'),
      created_at: Timestamp('Creation time.'),
      updated_at: Timestamp('Last change.'),
      revoked_at: NullableTimestamp('When the key was revoked; null while active.'),
    }),
  },
  // The key's owner and prefix are the issuer's to add to the create body (accounts/authenticator.ts).
  specFromCreate: (body: ApiKeySpec) => ({
    name: body.name,
    user_id: body.user_id,
    prefix: body.prefix,
    scope: body.scope ?? 'read_write',
    expires_at: body.expires_at ?? null,
  }),
  initialStatus: () => ({ revoked_at: null, last_used_at: null }),
  nameOf: (spec) => spec.name,
  toRecord: (key) => ({
    id: key.meta.id,
    name: key.spec.name,
    prefix: key.spec.prefix,
    status: key.status.status,
    user_id: key.spec.user_id,
    scope: key.spec.scope ?? 'read_write',
    expires_at: key.spec.expires_at ?? null,
    last_used_at: key.status.last_used_at ?? null,
    ...stamps(key),
    revoked_at: key.status.revoked_at ?? null,
  }),
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'name', label: 'Name' },
      { key: 'prefix', label: 'Prefix' },
      { key: 'status', label: 'Status' },
      { key: 'scope', label: 'Scope' },
      { key: 'expires_at', label: 'Expires at' },
      { key: 'last_used_at', label: 'Last used at' },
    ],
  },
};

/** Account families: the team, its users (the profile) and their API keys. */
import { Type } from '@sinclair/typebox';
import type { BaseStatus, CreateBody, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
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

const TeamUpdate = strictObject({ name: Type.Optional(TeamName) });
const ProfileUpdate = strictObject({ name: Type.Optional(UserName), email: Type.Optional(Email) });

const ALL_TEAMS = { path: '/teams', group: ['teams'] };

/** The caller's team, and every team for an installation admin (api/routes/settings.ts, teams.ts). */
const TEAM_COMMANDS: readonly FamilyCommand[] = [
  { words: ['get'], summary: 'Get the team', method: 'GET', path: '', versioned: true },
  { words: ['update'], summary: 'Update the team (owner or admin)', method: 'PATCH', path: '', versioned: true, body: TeamUpdate },
  {
    words: ['list'],
    summary: 'List every team (installation admin)',
    method: 'GET',
    path: '',
    base: ALL_TEAMS,
    query: { list: true },
    paged: true,
  },
  { words: ['get'], summary: 'Get a team (installation admin)', method: 'GET', path: '/{id}', base: ALL_TEAMS },
  {
    words: ['create'],
    summary: "Create a team with its owner (installation admin); the owner's key is shown once",
    method: 'POST',
    path: '',
    base: ALL_TEAMS,
    body: Type.Object({
      name: Type.String({ description: 'Team name.' }),
      owner_email: Type.String({ description: "The owner's e-mail address." }),
      owner_name: Type.Optional(Type.String({ description: "The owner's display name." })),
    }),
    columns: ['id', 'name', 'owner_id', 'api_key'],
  },
];

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
    update: TeamUpdate,
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
  commands: TEAM_COMMANDS,
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

const MEMBERS = { path: '/settings/team/members', group: ['settings', 'members'] };
const Role = Type.String({ enum: [...ROLES], description: 'owner, admin, member or viewer.' });

/** The caller's profile, and the team's members (api/routes/settings.ts). */
const PROFILE_COMMANDS: readonly FamilyCommand[] = [
  { words: ['get'], summary: 'Get your profile', method: 'GET', path: '', versioned: true },
  { words: ['update'], summary: 'Update your profile', method: 'PATCH', path: '', versioned: true, body: ProfileUpdate },
  { words: ['list'], summary: 'List team members', method: 'GET', path: '', base: MEMBERS, query: { list: true }, paged: true },
  { words: ['get'], summary: 'Get a team member', method: 'GET', path: '/{id}', versioned: true, base: MEMBERS },
  {
    words: ['invite'],
    summary: 'Invite a member (owner or admin)',
    method: 'POST',
    path: '',
    versioned: true,
    base: MEMBERS,
    body: Type.Object({
      email: Type.String({ description: 'E-mail address of the member.' }),
      role: Role,
      name: Type.Optional(Type.String({ description: 'Display name; default the part of the e-mail before the @.' })),
    }),
  },
  { words: ['update'], summary: "Change a member's role", method: 'PATCH', path: '/{id}', versioned: true, base: MEMBERS, body: Type.Object({ role: Role }) },
  { words: ['remove'], summary: 'Remove a member (their keys are revoked)', method: 'DELETE', path: '/{id}', versioned: true, base: MEMBERS },
];

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
    update: ProfileUpdate,
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
  commands: PROFILE_COMMANDS,
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

const SHOWN_ONCE_COLUMNS = ['id', 'name', 'scope', 'expires_at', 'key'];

/** Keys are listed, made (shown once), revoked and rotated (api/routes/settings.ts). */
const API_KEY_COMMANDS: readonly FamilyCommand[] = [
  { words: ['list'], summary: 'List API keys', method: 'GET', path: '', query: { list: true }, paged: true },
  { words: ['create'], summary: 'Create an API key (the key is shown once)', method: 'POST', path: '', body: ApiKeyCreate, columns: SHOWN_ONCE_COLUMNS },
  { words: ['revoke'], summary: 'Revoke an API key', method: 'DELETE', path: '/{id}', columns: [] },
  {
    words: ['rotate'],
    summary: 'Rotate an API key: a new key (shown once) replaces it, and it is revoked',
    method: 'POST',
    path: '/{id}/rotate',
    columns: SHOWN_ONCE_COLUMNS,
  },
];

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
  commands: API_KEY_COMMANDS,
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

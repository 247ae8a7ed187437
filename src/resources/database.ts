/**
 * Managed databases: PostgreSQL first (`engine: pg`), a primary and its standbys. Field
 * names follow DigitalOcean's database API where the spec is silent (docs/api.md,
 * Databases). The administrator's password is kept in a store secret, never in the
 * resource: it is shown once, by the create and by `reset-password`.
 */
import { Static, Type } from '@sinclair/typebox';
import { randomString } from '../lib/ids';
import { parseIpv4Block } from '../lib/cidr';
import { fieldInvalid } from '../lib/errors';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, ForeignEvent, Resource } from './family';
import { presentDetails } from './family';
import type { FamilyCommand } from './commands';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  connectionSecretProperty,
  ExternalRecordSchema,
  IdOf,
  Region,
  ResourceName,
  StringEnum,
  strictObject,
  recordTimes,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import {
  backupCommands,
  backupFamily,
  backupPolicySchemas,
  policyOf,
  policyRecord,
  sourceOf,
  type BackupPolicy,
  type BackupSpec,
  type BackupStatus,
} from './backup';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'running', 'failed', 'deleted', 'destroyed'] as const;
export const DATABASE_ENGINES = ['pg'] as const;
/** The PostgreSQL majors a database may ask for; none asked, the driver's newest. */
export const PG_VERSIONS = ['14', '15', '16', '17'] as const;
/** Plans, as DigitalOcean names them: vCPUs and memory of each node. */
export const DATABASE_SIZES = ['db-s-1vcpu-1gb', 'db-s-1vcpu-2gb', 'db-s-2vcpu-4gb', 'db-s-4vcpu-8gb'] as const;
/** The administrator a new database has, and its first logical database. */
export const ADMIN_USER = 'dbadmin';
export const DEFAULT_DATABASE = 'defaultdb';
const PASSWORD_LENGTH = 32;
const PASSWORD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Users, logical databases and trusted sources a database holds at most. */
export const DATABASE_PART_LIMIT = 50;

/** A new password: of a database's administrator, or of one of its users. */
export const newDatabasePassword = () => randomString(PASSWORD_LENGTH, PASSWORD_ALPHABET);

/** The store secret holding a user's password: `db-user-<database id>.<user name>`. */
export const USER_PASSWORD_PREFIX = 'db-user-';
export const userPasswordSecret = (id: string, user: string) => `${USER_PASSWORD_PREFIX}${id}.${user}`;
/** The database a user's password secret belongs to, and the user. */
export function ownerOfUserPassword(name: string): { id: string; user: string } | null {
  const [id, user] = name.slice(USER_PASSWORD_PREFIX.length).split('.');
  return id && user ? { id, user } : null;
}

/** Names PostgreSQL keeps, or the service does, that no user or logical database may take. */
const RESERVED_NAMES = new Set([ADMIN_USER, DEFAULT_DATABASE, 'postgres', 'template0', 'template1', 'public']);

/** Refuses a user or logical database name the service or PostgreSQL keeps. */
export function assertPartNameFree(field: string, name: string): void {
  if (RESERVED_NAMES.has(name) || name.startsWith('pg_')) throw fieldInvalid(field, `"${name}" is kept by PostgreSQL or the service; choose another name`);
}

export interface DatabaseSpec {
  name: string;
  engine: (typeof DATABASE_ENGINES)[number];
  /** The major asked for; absent for the driver's newest (absent, not null: a CRD's enum takes no null). */
  version?: string;
  region: string;
  size: string;
  num_nodes: number;
  storage_gb: number;
  /** Bumped by reset-password: the driver sets the new password (FamilyDefinition.secret). */
  password_version: number;
  /** Users beside the administrator (absent on databases made before there were any). */
  users?: DatabaseUser[];
  /** Logical databases beside `defaultdb`. */
  db_names?: string[];
  /** Who may connect; none: anyone with the password. */
  trusted_sources?: TrustedSource[];
  /** The backup (of another database) it was made from, holding that database's data. */
  backup_restore?: { backup_id: string };
  /** A daily backup, as servers have (resources/backup.ts). */
  backup_policy?: BackupPolicy;
}

/** A user of a database; its password is a store secret of its own (userPasswordSecret). */
export interface DatabaseUser {
  name: string;
  /** Bumped by the user's reset-password: the driver sets the new one. */
  password_version: number;
}

/** An address block, or a server (by id) whose address the driver allows. */
export interface TrustedSource {
  type: 'ip_addr' | 'server';
  value: string;
}

/** How a client reaches it: what the driver gives out once it runs. */
export interface DatabaseConnection {
  host: string;
  port: number;
  user: string;
  database: string;
  ssl_mode: string;
}

export interface DatabaseStatus extends BaseStatus {
  connection: DatabaseConnection | null;
  /** The major that runs. */
  version: string | null;
  /** Standbys that follow the primary. */
  standby_nodes: number;
  /** The logical databases beside defaultdb as last applied by the driver; absent until then (a status of an earlier version). */
  db_names?: string[];
  external?: ExternalRecord;
}
export type Database = Resource<DatabaseSpec, DatabaseStatus>;

const Engine = StringEnum(DATABASE_ENGINES, { description: 'The engine: pg (PostgreSQL).' });
const Version = Type.String({ enum: [...PG_VERSIONS], description: 'PostgreSQL major version; default the newest the provider offers.' });
const Size = StringEnum(DATABASE_SIZES, { description: 'The plan of each node: vCPUs and memory. Default db-s-1vcpu-1gb.' });
const NumNodes = Type.Integer({ minimum: 1, maximum: 3, description: 'Nodes: one primary and up to two standbys. Default 1.' });
const StorageGb = Type.Integer({ minimum: 10, maximum: 4096, description: 'Storage of each node in GB, 10-4096. Default 10.' });

/** The `data` of a `data.*` event of a logical database (events/catalog.ts declares the type with the other kinds). */
export const LogicalDatabaseEventData = {
  database_id: Type.String({ description: 'The database (`db_…`) a logical database was made in or dropped from.' }),
  database_name: Type.String({ description: "The database's name." }),
  name: Type.String({ description: "The logical database's name." }),
};

/**
 * A logical database the driver made is `data.created`, one it dropped with everything in it
 * `data.destroyed`: told once the change is applied, whoever asked (the API, kubectl). A
 * status without the list (written by an earlier version) tells nothing: what it held is not known.
 */
function logicalDatabaseEvents(previous: Database, next: Database): ForeignEvent[] {
  const before = previous.status.db_names;
  const after = next.status.db_names;
  if (!before || !after) return [];
  const event = (type: string, name: string): ForeignEvent => ({
    type,
    data: { kind: 'database', database_id: next.meta.id, database_name: next.spec.name, name },
  });
  return [
    ...after.filter((name) => !before.includes(name)).map((name) => event('data.created', name)),
    ...before.filter((name) => !after.includes(name)).map((name) => event('data.destroyed', name)),
  ];
}

/** A PostgreSQL identifier that needs no quoting: lower-case letters, digits and underscores. */
export const PartName = (what: string) =>
  Type.String({
    pattern: '^[a-z_][a-z0-9_]{0,62}$',
    description: `The ${what}'s name: lower-case letters, digits and underscores, 1-63, not starting with a digit.`,
  });

const TrustedSourceSchema = strictObject(
  {
    type: StringEnum(['ip_addr', 'server'] as const, { description: 'ip_addr: an IPv4 address or block; server: a server of the team, by id.' }),
    value: Type.String({ minLength: 1, maxLength: 64, description: 'The address or block (203.0.113.7, 10.0.0.0/8), or the server id.' }),
  },
  'A source allowed to connect.',
);
const TrustedSources = Type.Array(TrustedSourceSchema, {
  maxItems: DATABASE_PART_LIMIT,
  description: 'Who may connect: none, anyone with a password; else only these addresses, blocks and servers.',
});

const BackupRestore = strictObject(
  { backup_id: IdOf('bkp', 'A completed backup of a database of the team.') },
  "Makes the database from a backup: its data, its logical databases and its major version (a version asked for must be that one). Its users are not restored: the new database's administrator owns what they owned.",
);

const { Input: BackupPolicyInput, Spec: BackupPolicySpec, Record: BackupPolicyRecord } = backupPolicySchemas('database');

const DatabaseUpdate = strictObject({
  size: Type.Optional(Size),
  num_nodes: Type.Optional(NumNodes),
  storage_gb: Type.Optional(StorageGb),
  trusted_sources: Type.Optional(TrustedSources),
  backup_policy: Type.Optional(Type.Union([BackupPolicyInput, Type.Null()], { description: 'A new daily backup policy; null removes it.' })),
});

/** An address or block of a trusted source as a block (`203.0.113.7` → `203.0.113.7/32`); null if neither. */
export function trustedBlockOf(value: string): string | null {
  const block = value.includes('/') ? value : `${value}/32`;
  return parseIpv4Block(block) ? block : null;
}

function checkTrustedSources(sources: readonly TrustedSource[]): TrustedSource[] {
  sources.forEach((source, i) => {
    if (source.type === 'ip_addr' && !trustedBlockOf(source.value))
      throw fieldInvalid(`trusted_sources[${i}].value`, `"${source.value}" is not an IPv4 address or network block (203.0.113.7, 10.0.0.0/8)`);
    if (source.type === 'server' && !source.value.startsWith('srv_')) throw fieldInvalid(`trusted_sources[${i}].value`, `"${source.value}" is not a server id`);
  });
  return [...sources];
}

const ConnectionSchema = strictObject(
  {
    host: Type.String({ description: 'Host name or address.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'TCP port.' }),
    user: Type.String({ description: 'The administrator.' }),
    database: Type.String({ description: 'The first logical database.' }),
    ssl_mode: Type.String({ description: 'The sslmode a client should use: require, or disable where the server offers no TLS (the local driver).' }),
  },
  'How a client connects.',
);
const ConnectionRecord = strictObject(
  {
    ...ConnectionSchema.properties,
    uri: Type.String({ description: 'A postgresql:// URI of the above, without the password.' }),
  },
  'How a client connects; the password is shown once, by the create and by reset-password.',
);

const DatabaseCreate = strictObject({
  name: ResourceName(),
  engine: Type.Optional(Engine),
  version: Type.Optional(Version),
  region: Region(),
  size: Type.Optional(Size),
  num_nodes: Type.Optional(NumNodes),
  storage_gb: Type.Optional(StorageGb),
  trusted_sources: Type.Optional(TrustedSources),
  backup_restore: Type.Optional(BackupRestore),
  backup_policy: Type.Optional(BackupPolicyInput),
});

const withPolicy = (policy: BackupPolicy | undefined) => (policy ? { backup_policy: policy } : {});

/** A user as the API shows it: the administrator is `primary`, the others `normal`. */
export const DatabaseUserRecord = strictObject(
  {
    name: Type.String({ description: "The user's name." }),
    role: StringEnum(['primary', 'normal'] as const, { description: 'primary: the administrator (dbadmin); normal: a user made through the API.' }),
  },
  'A user of the database; its password is shown once, by its create and its reset-password.',
);

/** `postgresql://user@host:port/database?sslmode=...`: everything but the password. */
export function connectionUri({ host, port, user, database, ssl_mode }: DatabaseConnection): string {
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `postgresql://${encodeURIComponent(user)}@${hostPart}:${port}/${encodeURIComponent(database)}?sslmode=${ssl_mode}`;
}

/** Reset-password answers the record with the new password, once (api/routes/databases.ts). */
const DATABASE_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['reset-password'],
    summary: "Reset the administrator's password (the new one is shown once)",
    method: 'POST',
    path: '/{id}/reset-password',
    versioned: true,
    columns: ['id', 'name', 'status', 'password'],
    waitFor: ['running'],
  },
  ...backupCommands('database'),
  { words: ['users', 'list'], summary: "List a database's users", method: 'GET', path: '/{id}/users', versioned: true, columns: ['name', 'role'] },
  { words: ['users', 'get'], summary: 'Get a user of a database', method: 'GET', path: '/{id}/users/{name}', versioned: true, columns: ['name', 'role'] },
  {
    words: ['users', 'create'],
    summary: 'Add a user (its password is shown once)',
    method: 'POST',
    path: '/{id}/users',
    versioned: true,
    body: strictObject({ name: PartName('user') }),
    columns: ['name', 'role', 'password'],
  },
  {
    words: ['users', 'reset-password'],
    summary: "Reset a user's password (the new one is shown once)",
    method: 'POST',
    path: '/{id}/users/{name}/reset-password',
    versioned: true,
    columns: ['name', 'role', 'password'],
  },
  { words: ['users', 'delete'], summary: 'Remove a user', method: 'DELETE', path: '/{id}/users/{name}', versioned: true, columns: ['name', 'role'] },
  { words: ['dbs', 'list'], summary: "List a database's logical databases", method: 'GET', path: '/{id}/dbs', versioned: true, columns: ['name'] },
  { words: ['dbs', 'get'], summary: 'Get a logical database', method: 'GET', path: '/{id}/dbs/{name}', versioned: true, columns: ['name'] },
  {
    words: ['dbs', 'create'],
    summary: 'Add a logical database',
    method: 'POST',
    path: '/{id}/dbs',
    versioned: true,
    body: strictObject({ name: PartName('logical database') }),
    columns: ['name'],
  },
  {
    words: ['dbs', 'delete'],
    summary: 'Remove a logical database and everything in it',
    method: 'DELETE',
    path: '/{id}/dbs/{name}',
    versioned: true,
    columns: ['name'],
  },
];

export const databaseFamily: FamilyDefinition<DatabaseSpec, DatabaseStatus> = {
  name: 'database',
  quota: { default: 100 },
  title: 'database',
  kind: 'Database',
  plural: 'databases',
  shortNames: ['cpdb'],
  path: 'databases',
  idPrefix: 'db',
  states: STATES,
  readyStates: ['running'],
  providerBacked: true,
  deletion: 'immediate',
  creationEvent: 'created',
  eventVerbs: { updated: 'had a new configuration applied (its password reset, or an edit of its custom resource).' },
  uniqueNames: true,
  description: 'A managed PostgreSQL database: a primary and its standbys.',
  secret: {
    field: 'password',
    secretName: (id) => `db-password-${id}`,
    generate: newDatabasePassword,
    versionField: 'password_version' satisfies keyof DatabaseSpec,
    shownOnCreate: "The administrator's password, shown in this answer only; reset-password makes a new one.",
  },
  schemas: {
    create: DatabaseCreate,
    update: DatabaseUpdate,
    spec: strictObject({
      name: ResourceName(),
      engine: Engine,
      version: Type.Optional(Version),
      region: Region(),
      size: Size,
      num_nodes: NumNodes,
      storage_gb: StorageGb,
      password_version: Type.Integer({ minimum: 0, description: 'Password resets asked for; reset-password increments it.' }),
      users: Type.Optional(
        Type.Array(
          strictObject({
            name: PartName('user'),
            password_version: Type.Integer({ minimum: 0, description: "The user's password resets; its reset-password increments it." }),
          }),
          { maxItems: DATABASE_PART_LIMIT, description: 'Users beside the administrator; each password is a store secret.' },
        ),
      ),
      db_names: Type.Optional(Type.Array(PartName('logical database'), { maxItems: DATABASE_PART_LIMIT, description: 'Logical databases beside defaultdb.' })),
      trusted_sources: Type.Optional(TrustedSources),
      backup_restore: Type.Optional(BackupRestore),
      backup_policy: Type.Optional(BackupPolicySpec),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      connection: Type.Union([ConnectionSchema, Type.Null()]),
      version: Type.Union([Type.String(), Type.Null()], { description: 'The major version that runs.' }),
      standby_nodes: Type.Integer({ minimum: 0, description: 'Standbys following the primary.' }),
      db_names: Type.Optional(
        Type.Array(Type.String(), { maxItems: DATABASE_PART_LIMIT, description: 'The logical databases beside defaultdb, as the driver last applied them.' }),
      ),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('db', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      engine: Engine,
      version: Type.Union([Type.String(), Type.Null()], { description: 'The major version: the one that runs, else the one asked for; null until known.' }),
      region: Region(),
      size: Size,
      num_nodes: NumNodes,
      storage_gb: StorageGb,
      connection: Type.Union([ConnectionRecord, Type.Null()], { description: 'How a client connects; null until the database runs.' }),
      standby_nodes: Type.Integer({ minimum: 0, description: 'Standbys following the primary.' }),
      users: Type.Array(DatabaseUserRecord, { description: 'The administrator and the users made through /databases/{id}/users.' }),
      db_names: Type.Array(Type.String(), { description: 'Its logical databases: defaultdb and those made through /databases/{id}/dbs.' }),
      trusted_sources: TrustedSources,
      backup_restore: Type.Union([BackupRestore, Type.Null()], { description: 'The backup it was made from; null for a new one.' }),
      backup_policy: BackupPolicyRecord,
    }),
  },
  specFromCreate(body: Static<typeof DatabaseCreate>, { config }) {
    assertRegionAvailable(config, body.region);
    return {
      name: body.name,
      engine: body.engine ?? 'pg',
      ...(body.version ? { version: body.version } : {}),
      region: body.region,
      size: body.size ?? DATABASE_SIZES[0],
      num_nodes: body.num_nodes ?? 1,
      storage_gb: body.storage_gb ?? 10,
      password_version: 0,
      ...(body.trusted_sources ? { trusted_sources: checkTrustedSources(body.trusted_sources) } : {}),
      ...(body.backup_restore ? { backup_restore: body.backup_restore } : {}),
      ...withPolicy(policyOf(body.backup_policy)),
    };
  },
  /** Made from a backup: a completed database backup of the team, whose major and logical databases it takes. */
  async resolveCreate(spec, team, store) {
    if (!spec.backup_restore) return spec;
    const field = 'backup_restore.backup_id';
    const { backup_id: backupId } = spec.backup_restore;
    const backup = await store.get<BackupSpec, BackupStatus>(backupFamily.kind, team, backupId);
    if (!backup || backup.meta.deletionTimestamp || backup.status.status === 'destroyed') throw fieldInvalid(field, `no backup ${backupId} in this team`);
    const of = sourceOf(backup.spec);
    if (of?.family !== 'database') throw fieldInvalid(field, `${backupId} is not a backup of a database`);
    if (backup.status.status !== 'completed') throw fieldInvalid(field, `${backupId} is ${backup.status.status}; only a completed backup can be restored`);
    const source = await store.get<DatabaseSpec, DatabaseStatus>(databaseFamily.kind, team, of.id);
    const major = source?.status.version ?? source?.spec.version;
    if (!source || !major) throw fieldInvalid(field, `the database ${of.id} backed up is gone`);
    if (spec.version && spec.version !== major) throw fieldInvalid('version', `the backup holds PostgreSQL ${major}; leave version out or ask for ${major}`);
    return { ...spec, version: major, db_names: source.spec.db_names ?? [] };
  },
  /** Storage grows, never shrinks (a volume cannot give back what the data may use). */
  applyUpdate(spec, patch: Static<typeof DatabaseUpdate>) {
    if (patch.storage_gb !== undefined && patch.storage_gb < spec.storage_gb)
      throw fieldInvalid('storage_gb', `cannot shrink the storage from ${spec.storage_gb} to ${patch.storage_gb} GB; it only grows`);
    const { trusted_sources, backup_policy: policy, ...resized } = patch;
    const { backup_policy: previous, ...next } = { ...spec, ...resized, ...(trusted_sources ? { trusted_sources: checkTrustedSources(trusted_sources) } : {}) };
    // Absent: the policy stays; null: it goes; a new one replaces it.
    return { ...next, ...withPolicy(policy === undefined ? previous : policyOf(policy)) };
  },
  initialStatus: () => ({ connection: null, version: null, standby_nodes: 0, db_names: [] }),
  dataEvents: logicalDatabaseEvents,
  nameOf: (spec) => spec.name,
  commands: DATABASE_COMMANDS,
  connectionDetails: ({ status }) =>
    status.connection
      ? presentDetails({
          host: status.connection.host,
          port: String(status.connection.port),
          user: status.connection.user,
          database: status.connection.database,
          ssl_mode: status.connection.ssl_mode,
          uri: connectionUri(status.connection),
        })
      : null,
  toRecord: ({ meta, spec, status }) => ({
    id: meta.id,
    name: spec.name,
    status: status.status,
    status_reason: status.status_reason ?? null,
    ...reconcileRecord(status),
    engine: spec.engine,
    version: status.version ?? spec.version ?? null,
    region: spec.region,
    size: spec.size,
    num_nodes: spec.num_nodes,
    storage_gb: spec.storage_gb,
    connection: status.connection ? { ...status.connection, uri: connectionUri(status.connection) } : null,
    standby_nodes: status.standby_nodes,
    users: [{ name: ADMIN_USER, role: 'primary' }, ...(spec.users ?? []).map(({ name }) => ({ name, role: 'normal' }))],
    db_names: [DEFAULT_DATABASE, ...(spec.db_names ?? [])],
    trusted_sources: spec.trusted_sources ?? [],
    backup_restore: spec.backup_restore ?? null,
    backup_policy: policyRecord(spec.backup_policy),
    ...recordTimes(meta, status),
  }),
  presentation: {
    columns: [...REGIONAL_COLUMNS, { key: 'version', label: 'Version', secondary: true }, { key: 'size', label: 'Size', secondary: true }],
  },
};

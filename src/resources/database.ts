/**
 * Managed databases: PostgreSQL first (`engine: pg`), a primary and its standbys. Field
 * names follow DigitalOcean's database API where the spec is silent (docs/api.md,
 * Databases). The administrator's password is kept in a store secret, never in the
 * resource: it is shown once, by the create and by `reset-password`.
 */
import { Static, Type } from '@sinclair/typebox';
import { randomString } from '../lib/ids';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import { presentDetails } from './family';
import type { FamilyCommand } from './commands';
import {
  baseRecordProperties,
  baseStatusProperties,
  connectionSecretProperty,
  ExternalRecordSchema,
  Region,
  ResourceName,
  StringEnum,
  strictObject,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { BASIC_COLUMNS } from './presentation';

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
  external?: ExternalRecord;
}
export type Database = Resource<DatabaseSpec, DatabaseStatus>;

const Engine = StringEnum(DATABASE_ENGINES, { description: 'The engine: pg (PostgreSQL).' });
const Version = Type.String({ enum: [...PG_VERSIONS], description: 'PostgreSQL major version; default the newest the provider offers.' });
const Size = StringEnum(DATABASE_SIZES, { description: 'The plan of each node: vCPUs and memory. Default db-s-1vcpu-1gb.' });
const NumNodes = Type.Integer({ minimum: 1, maximum: 3, description: 'Nodes: one primary and up to two standbys. Default 1.' });
const StorageGb = Type.Integer({ minimum: 10, maximum: 4096, description: 'Storage of each node in GB, 10-4096. Default 10.' });

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
});

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
    columns: ['id', 'name', 'status', 'password'],
    waitFor: ['running'],
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
    generate: () => randomString(PASSWORD_LENGTH, PASSWORD_ALPHABET),
    versionField: 'password_version' satisfies keyof DatabaseSpec,
    shownOnCreate: "The administrator's password, shown in this answer only; reset-password makes a new one.",
  },
  schemas: {
    create: DatabaseCreate,
    spec: strictObject({
      name: ResourceName(),
      engine: Engine,
      version: Type.Optional(Version),
      region: Region(),
      size: Size,
      num_nodes: NumNodes,
      storage_gb: StorageGb,
      password_version: Type.Integer({ minimum: 0, description: 'Password resets asked for; reset-password increments it.' }),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      connection: Type.Union([ConnectionSchema, Type.Null()]),
      version: Type.Union([Type.String(), Type.Null()], { description: 'The major version that runs.' }),
      standby_nodes: Type.Integer({ minimum: 0, description: 'Standbys following the primary.' }),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('db', STATES),
      name: ResourceName(),
      engine: Engine,
      version: Type.Union([Type.String(), Type.Null()], { description: 'The major version: the one that runs, else the one asked for; null until known.' }),
      region: Region(),
      size: Size,
      num_nodes: NumNodes,
      storage_gb: StorageGb,
      connection: Type.Union([ConnectionRecord, Type.Null()], { description: 'How a client connects; null until the database runs.' }),
      standby_nodes: Type.Integer({ minimum: 0, description: 'Standbys following the primary.' }),
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
    };
  },
  initialStatus: () => ({ connection: null, version: null, standby_nodes: 0 }),
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
    engine: spec.engine,
    version: status.version ?? spec.version ?? null,
    region: spec.region,
    size: spec.size,
    num_nodes: spec.num_nodes,
    storage_gb: spec.storage_gb,
    connection: status.connection ? { ...status.connection, uri: connectionUri(status.connection) } : null,
    standby_nodes: status.standby_nodes,
    created_at: meta.createdAt,
    updated_at: meta.updatedAt,
    deleted_at: status.deleted_at ?? null,
  }),
  presentation: {
    // Not in the console until it can show a password once (a create's answer, reset-password).
    console: false,
    columns: [
      ...BASIC_COLUMNS,
      { key: 'region', label: 'Region' },
      { key: 'version', label: 'Version', secondary: true },
      { key: 'size', label: 'Size', secondary: true },
    ],
  },
};

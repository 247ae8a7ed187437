/**
 * Database actions and named parts: a new administrator's password, shown once; users
 * (`/databases/{id}/users`, each with its own password, shown once by its create and its
 * reset-password) and logical databases (`/databases/{id}/dbs`). Both parts live in the
 * database's spec, the one truth kubectl sees too; a user's password is a store secret.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import {
  assertChangeable,
  envelopeOf,
  ErrorEnvelope,
  findForChange,
  findResource,
  principalOf,
  rotateSecret,
  type SpecUpdate,
  VERSIONED_CHANGE,
  withSecret,
  withShownSecret,
} from './families';
import { tagAnswer, type VersionCheck } from '../entity-tags';
import {
  ADMIN_USER,
  assertPartNameFree,
  DATABASE_PART_LIMIT,
  databaseFamily as family,
  DatabaseUserRecord,
  DEFAULT_DATABASE,
  newDatabasePassword,
  PartName,
  userPasswordSecret,
  type Database,
  type DatabaseSpec,
} from '../../resources/database';
import type { ApiApp } from '../api-app';
import type { BackupSource } from './backups';
import { known } from '../../lib/known';
import { ApiError, conflict } from '../../lib/errors';
import { recordOf } from '../../resources/record-of';

/** Backups of databases, under /databases/{id}/backups (routes/backups.ts); restored by a create with backup_restore. */
export const DATABASE_BACKUPS: BackupSource = {
  family,
  noun: 'Database',
  field: 'database_id',
  copyOf: 'the database (its data, logical databases and roles)',
};

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const PartParams = Type.Object({ id: Type.String({ maxLength: 64 }), name: Type.String({ maxLength: 64 }) });
const NewUser = Type.Object({ name: PartName('user') }, { additionalProperties: false });
const NewDb = Type.Object({ name: PartName('logical database') }, { additionalProperties: false });
const UserWithPassword = Type.Object(
  { ...DatabaseUserRecord.properties, password: Type.String({ description: "The user's password, shown in this answer only." }) },
  { additionalProperties: false },
);
const DbRecord = Type.Object({ name: Type.String({ description: "The logical database's name." }) }, { additionalProperties: false });

const userNotFound = (id: string, name: string) => new ApiError(404, 'database_user_not_found', `Database ${id} has no user "${name}".`);
const dbNotFound = (id: string, name: string) => new ApiError(404, 'database_db_not_found', `Database ${id} has no logical database "${name}".`);
const partLimit = (what: string) =>
  new ApiError(422, 'quota_exceeded', `A database holds at most ${DATABASE_PART_LIMIT} ${what}; delete one first.`, [
    { field: 'name', message: 'over the limit' },
  ]);

interface RouteDoc {
  operationId: string;
  summary: string;
  description: string;
}

export function registerDatabaseRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${family.path}/:id`;
  const errors = { 404: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope };
  /** A change of the database answers 412 too, when If-Match no longer holds. */
  const changeErrors = { ...errors, ...VERSIONED_CHANGE.preconditionFailed };
  const doc = ({ operationId, summary, description }: RouteDoc) => ({ tags: [family.title], operationId, summary, description });
  const config = { family: family.name };
  // Every answer about a database, its named parts included, carries its ETag: the version read, or the one written.
  /** The database of the request, to read. */
  const databaseOf = async (request: FastifyRequest, reply: FastifyReply, id: string) => {
    const database = await findResource<Database>(ctx, family, principalOf(request).team, id);
    tagAnswer(reply, database);
    return database;
  };
  /** The database of the request, to change: changeable, and at the version If-Match names (if any). */
  const databaseToChange = async (request: FastifyRequest, id: string) => {
    const { found, ifMatch } = await findForChange<Database>(ctx, family, request, id);
    assertChangeable(family, found);
    return { team: principalOf(request).team, database: found, ifMatch };
  };
  /** Changes the database's spec on its latest version, refused as a write of a deleted one is, or by If-Match. */
  const changeSpec = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    ifMatch: VersionCheck | undefined,
    change: (spec: DatabaseSpec) => DatabaseSpec,
  ) => {
    const { team, key } = principalOf(request);
    const updated = await ctx.writer.mutateSpec<Database>(
      family,
      team,
      id,
      (current) => {
        assertChangeable(family, current);
        return change(current.spec);
      },
      key,
      ifMatch,
    );
    tagAnswer(reply, updated);
    return updated;
  };

  const passwordSecret = known(family.secret, "the administrator's password secret of a database");
  app.post(`${base}/reset-password`, {
    config,
    schema: {
      ...doc({
        operationId: 'resetDatabasePassword',
        summary: "Reset the administrator's password",
        description:
          'Makes a new password for the administrator and answers it in `password`, once; the driver sets it on the database (`database.updated`), and the old one stops working. A deleted database answers 409 invalid_state.',
      }),
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(withShownSecret(family)), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { team, database, ifMatch } = await databaseToChange(request, request.params.id);
      const { id } = request.params;
      const password = known(passwordSecret.generate?.(database.spec), "a new database password (the family's secret generates one)");
      const update: SpecUpdate<Database> = (extra = () => ({})) => changeSpec(request, reply, id, ifMatch, (spec) => ({ ...spec, ...extra(database) }));
      const updated = await rotateSecret(ctx, family, team, id, password, update);
      return send(ctx, request, reply, 200, { ...recordOf(family, updated), [passwordSecret.field]: password });
    },
  });

  // Users: the administrator (primary) and those made here (normal), each with its own password.
  const usersOf = (spec: DatabaseSpec) => [
    { name: ADMIN_USER, role: 'primary' as const },
    ...(spec.users ?? []).map(({ name }) => ({ name, role: 'normal' as const })),
  ];
  const userOf = (database: Database, name: string) => {
    const user = usersOf(database.spec).find((u) => u.name === name);
    if (!user) throw userNotFound(database.meta.id, name);
    return user;
  };
  /** A user's new password: its secret first, then the spec that names its version (the driver sets it). */
  const setUserPassword = (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    name: string,
    ifMatch: VersionCheck | undefined,
    change: (spec: DatabaseSpec) => DatabaseSpec,
  ) => {
    const password = newDatabasePassword();
    return withSecret(ctx, principalOf(request).team, userPasswordSecret(id, name), password, async () => {
      await changeSpec(request, reply, id, ifMatch, change);
      return { name, role: 'normal' as const, password };
    });
  };

  app.get(`${base}/users`, {
    config,
    schema: {
      ...doc({
        operationId: 'listDatabaseUsers',
        summary: "List a database's users",
        description: 'The administrator (role primary) and the users made through the API (role normal), never a password; at most 51, in one page.',
      }),
      params: IdParams,
      response: { 200: envelopeOf(Type.Array(DatabaseUserRecord)), ...errors },
    },
    handler: async (request, reply) => send(ctx, request, reply, 200, usersOf((await databaseOf(request, reply, request.params.id)).spec)),
  });
  app.get(`${base}/users/:name`, {
    config,
    schema: {
      ...doc({
        operationId: 'getDatabaseUser',
        summary: 'Get a user of a database',
        description: 'The user, without its password; 404 database_user_not_found if there is none by that name.',
      }),
      params: PartParams,
      response: { 200: envelopeOf(DatabaseUserRecord), ...errors },
    },
    handler: async (request, reply) => send(ctx, request, reply, 200, userOf(await databaseOf(request, reply, request.params.id), request.params.name)),
  });
  app.post(`${base}/users`, {
    config,
    schema: {
      ...doc({
        operationId: 'createDatabaseUser',
        summary: 'Add a user to a database',
        description:
          'Makes a user with a new password, answered in `password` once; the driver creates it (`database.updated`). A name taken is 409 name_taken; a name PostgreSQL or the service keeps (dbadmin, postgres, pg_…) 422 validation_failed; past 50 users 422 quota_exceeded.',
      }),
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      body: NewUser,
      response: { 201: envelopeOf(UserWithPassword), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { database, ifMatch } = await databaseToChange(request, request.params.id);
      const { name } = request.body;
      assertPartNameFree('name', name);
      const addTo = (spec: DatabaseSpec): DatabaseSpec => {
        const users = spec.users ?? [];
        if (users.some((u) => u.name === name)) throw conflict('name_taken', `Database ${database.meta.id} already has a user "${name}".`);
        if (users.length >= DATABASE_PART_LIMIT) throw partLimit('users');
        return { ...spec, users: [...users, { name, password_version: 0 }] };
      };
      // Checked before its secret is written too: a taken name must not have its password replaced, even for a moment.
      addTo(database.spec);
      const created = await setUserPassword(request, reply, database.meta.id, name, ifMatch, addTo);
      return send(ctx, request, reply, 201, created);
    },
  });
  app.post(`${base}/users/:name/reset-password`, {
    config,
    schema: {
      ...doc({
        operationId: 'resetDatabaseUserPassword',
        summary: "Reset a user's password",
        description:
          "Makes a new password for the user, answered in `password` once; the driver sets it (`database.updated`) and the old one stops working. The administrator's is reset by /databases/{id}/reset-password.",
      }),
      params: PartParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(UserWithPassword), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { database, ifMatch } = await databaseToChange(request, request.params.id);
      const { id, name } = request.params;
      if (userOf(database, name).role === 'primary')
        throw conflict('invalid_state', `The administrator's password is reset by POST /api/v1/databases/${id}/reset-password.`);
      const reset = await setUserPassword(request, reply, id, name, ifMatch, (spec) => ({
        ...spec,
        users: (spec.users ?? []).map((u) => (u.name === name ? { ...u, password_version: u.password_version + 1 } : u)),
      }));
      return send(ctx, request, reply, 200, reset);
    },
  });
  app.delete(`${base}/users/:name`, {
    config,
    schema: {
      ...doc({
        operationId: 'deleteDatabaseUser',
        summary: 'Remove a user from a database',
        description:
          'The driver drops the user, and what it owned passes to the administrator (`database.updated`). The administrator cannot be removed (409 invalid_state).',
      }),
      params: PartParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(DatabaseUserRecord), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { team, database, ifMatch } = await databaseToChange(request, request.params.id);
      const { id, name } = request.params;
      const user = userOf(database, name);
      if (user.role === 'primary') throw conflict('invalid_state', 'The administrator cannot be removed.');
      await changeSpec(request, reply, id, ifMatch, (spec) => ({ ...spec, users: (spec.users ?? []).filter((u) => u.name !== name) }));
      // The record sweep removes it too, should this fail: the spec no longer names the user.
      await ctx.store.secrets.delete(team, userPasswordSecret(id, name));
      return send(ctx, request, reply, 200, user);
    },
  });

  // Logical databases: defaultdb and those made here.
  const dbsOf = (spec: DatabaseSpec) => [DEFAULT_DATABASE, ...(spec.db_names ?? [])].map((name) => ({ name }));
  const dbOf = (database: Database, name: string) => {
    const db = dbsOf(database.spec).find((d) => d.name === name);
    if (!db) throw dbNotFound(database.meta.id, name);
    return db;
  };
  app.get(`${base}/dbs`, {
    config,
    schema: {
      ...doc({
        operationId: 'listDatabaseDbs',
        summary: "List a database's logical databases",
        description: 'defaultdb and those made through the API; at most 51, in one page.',
      }),
      params: IdParams,
      response: { 200: envelopeOf(Type.Array(DbRecord)), ...errors },
    },
    handler: async (request, reply) => send(ctx, request, reply, 200, dbsOf((await databaseOf(request, reply, request.params.id)).spec)),
  });
  app.get(`${base}/dbs/:name`, {
    config,
    schema: {
      ...doc({ operationId: 'getDatabaseDb', summary: 'Get a logical database', description: '404 database_db_not_found if there is none by that name.' }),
      params: PartParams,
      response: { 200: envelopeOf(DbRecord), ...errors },
    },
    handler: async (request, reply) => send(ctx, request, reply, 200, dbOf(await databaseOf(request, reply, request.params.id), request.params.name)),
  });
  app.post(`${base}/dbs`, {
    config,
    schema: {
      ...doc({
        operationId: 'createDatabaseDb',
        summary: 'Add a logical database',
        description:
          'The driver creates it, owned by the administrator (`database.updated`). A name taken is 409 name_taken; a name PostgreSQL keeps (postgres, template0, template1) 422 validation_failed; past 50 422 quota_exceeded.',
      }),
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      body: NewDb,
      response: { 201: envelopeOf(DbRecord), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { database, ifMatch } = await databaseToChange(request, request.params.id);
      const { name } = request.body;
      assertPartNameFree('name', name);
      await changeSpec(request, reply, database.meta.id, ifMatch, (spec) => {
        const names = spec.db_names ?? [];
        if (names.includes(name)) throw conflict('name_taken', `Database ${database.meta.id} already has a logical database "${name}".`);
        if (names.length >= DATABASE_PART_LIMIT) throw partLimit('logical databases');
        return { ...spec, db_names: [...names, name] };
      });
      return send(ctx, request, reply, 201, { name });
    },
  });
  app.delete(`${base}/dbs/:name`, {
    config,
    schema: {
      ...doc({
        operationId: 'deleteDatabaseDb',
        summary: 'Remove a logical database',
        description:
          'The driver drops it with everything in it, closing its connections (`database.updated`). defaultdb cannot be removed (409 invalid_state).',
      }),
      params: PartParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(DbRecord), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { database, ifMatch } = await databaseToChange(request, request.params.id);
      const { id, name } = request.params;
      const db = dbOf(database, name);
      if (name === DEFAULT_DATABASE) throw conflict('invalid_state', `${DEFAULT_DATABASE} cannot be removed.`);
      await changeSpec(request, reply, id, ifMatch, (spec) => ({ ...spec, db_names: (spec.db_names ?? []).filter((n) => n !== name) }));
      return send(ctx, request, reply, 200, db);
    },
  });
}

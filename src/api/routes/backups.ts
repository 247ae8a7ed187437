/**
 * Backups under their source: take one (POST /servers/{id}/backups, /databases/{id}/backups),
 * list and read a source's backups, delete one; and restore a server backup onto its server
 * (POST /servers/{id}/restore). Each records what is wanted (a new backup, a deletion, a
 * restore request on the backup's spec); the backup controller carries it out
 * (controllers/backup.ts).
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { isVisible } from '../visible';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { writeAndAwait } from '../awaiting';
import { Backup, backupFamily as family, restorePending, sourceOf } from '../../resources/backup';
import { Server, serverFamily } from '../../resources/server';
import { fieldInvalid, invalidState, notFound, resourceBusy } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { listedArray } from '../../store/listed';
import type { ApiApp } from '../api-app';
import { ruleContextOf } from '../../events/catalog';
import { asStored, type AnyFamily, type Resource } from '../../resources/family';
import { fieldOf } from '../../lib/unknown-values';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, previewSpecChange, sendDryRun } from '../dry-run';

const config = { family: family.name };
const tags = [family.title];
const ServerParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Server id.' }) });
const SourceParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Id of the server or database backed up.' }) });
const BackupParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Id of the server or database backed up.' }),
  backup_id: Type.String({ maxLength: 64, description: 'Backup id.' }),
});
const RestoreBody = Type.Object(
  { backup_id: Type.String({ minLength: 1, maxLength: 64, description: 'A completed backup of this server.' }) },
  { additionalProperties: false },
);
const errors = { 401: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope, 503: ErrorEnvelope };
const Record = family.schemas.record;

/** The server's completed backups, from the indexes (server_id, status). */
const completedBackupsOf = (ctx: ApiContext, team: string, serverId: string): Promise<Backup[]> =>
  listedArray<Backup['spec'], Backup['status']>(ctx.store, family.kind, team, { status: 'completed', where: { server_id: serverId } });

/** A backup of this source, or 404 backup_not_found (one of another source is not found here). */
async function findBackup(ctx: ApiContext, team: string, sourceId: string, backupId: string): Promise<Backup> {
  const backup = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
  if (!backup || !isVisible(backup) || sourceOf(backup.spec)?.id !== sourceId) throw notFound(family.name, backupId);
  return backup;
}

/** What backups are taken of: servers, databases. */
export interface BackupSource {
  family: AnyFamily;
  /** The noun of its operation ids: `Server` makes createServerBackup. */
  noun: string;
  /** The backup's field naming it. */
  field: 'server_id' | 'database_id';
  /** What a backup of it is a copy of, for the descriptions: "the server's disk". */
  copyOf: string;
}

/** A source that can be backed up: provisioned, not moving, not deleted, not failed. */
function assertBackupAllowed(source: BackupSource, resource: Resource): void {
  const { title } = source.family;
  if (resource.status.status === 'creating') throw resourceBusy(`The ${title} is still being created; back it up once it is running.`);
  assertChangeable(source.family, resource);
  if (resource.status.status === 'failed') throw invalidState(`The ${title} failed; there is nothing to back up.`);
}

export const SERVER_BACKUPS: BackupSource = { family: serverFamily, noun: 'Server', field: 'server_id', copyOf: "the server's disk" };

/** A running server, with no other restore asked for or under way, and a completed backup of it. */
function assertRestoreAllowed(server: Server, backup: Backup, completedSiblings: Backup[]): void {
  assertChangeable(serverFamily, server);
  if (server.status.status !== 'running') throw invalidState(`Cannot restore onto a server that is ${server.status.status}; it must be running.`);
  // A stop or reboot asked for and not begun yet would run under the restore.
  if (server.spec.power_state !== 'on' || (asStored(server.spec).reboot_requests ?? 0) > (asStored(server.status).reboots_done ?? 0))
    throw resourceBusy('The server has a power action under way; try again when it is done.');
  if (completedSiblings.some((b) => restorePending(b) || b.status.restore_state === 'restoring'))
    throw resourceBusy('A restore onto this server is under way; try again when it is done.');
  const state = backup.status.status;
  if (state === 'creating') throw resourceBusy('The backup is still being taken; restore it once it is completed.');
  if (state !== 'completed' || backup.meta.deletionTimestamp)
    throw invalidState(`The backup is ${backup.meta.deletionTimestamp ? 'deleted' : state}; only a completed backup can be restored.`);
}

const defaultName = (source: BackupSource, resource: Resource) => `${source.family.nameOf(resource.spec)}-${nowIso().replace(/[-:]|\.\d+Z$/g, '')}Z`;

/** Backups under a source: POST, GET (list), GET one and DELETE at /<source path>/{id}/backups. */
export function registerBackupRoutes(app: ApiApp, ctx: ApiContext, source: BackupSource): void {
  const base = `/api/v1/${source.family.path}/:id/backups`;
  const { noun, title } = { noun: source.noun, title: source.family.title };

  app.post(base, {
    config,
    schema: {
      tags,
      operationId: `create${noun}Backup`,
      summary: `Back up a ${title}`,
      description: `Starts a backup of ${source.copyOf}: 201 with the backup \`creating\`, then \`completed\` or \`failed\` (events backup.created, backup.completed, backup.failed). 409 resource_busy while the ${title} is being created or in a transient state, 409 invalid_state once it is deleted or failed.`,
      params: SourceParams,
      body: family.schemas.create,
      response: { 201: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const resource = await findResource(ctx, source.family, team, id);
      assertBackupAllowed(source, resource);
      // The family's create schema let only a string through; without a body, the default name.
      const name = fieldOf(request.body, 'name');
      const spec = family.specFromCreate(
        { name: typeof name === 'string' ? name : defaultName(source, resource), [source.field]: id, trigger: 'manual' },
        ruleContextOf(ctx.config),
      );
      const backup = (await ctx.writer.create(family, team, spec, key)) as Backup;
      reply.header('Location', `/api/v1/${source.family.path}/${id}/backups/${backup.meta.id}`);
      return send(ctx, request, reply, 201, recordOf(family, backup));
    },
  });

  app.get(base, {
    config,
    schema: {
      tags,
      operationId: `list${noun}Backups`,
      summary: `List a ${title}'s backups`,
      description: 'Newest first by default; paged and filtered like every list.',
      params: SourceParams,
      querystring: listQuerySchema(family.states),
      response: { 200: envelopeOf(Type.Array(Record)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, source.family, team, id);
      const { page, nextCursor } = await listPage(ctx.store, family, team, listQueryOf(request), ctx.cursorKey, { where: { [source.field]: id } });
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((b) => recordOf(family, b)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${base}/:backup_id`, {
    config,
    schema: {
      tags,
      operationId: `get${noun}Backup`,
      summary: `Get a backup of a ${title}`,
      params: BackupParams,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id, backup_id: backupId } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, source.family, team, id);
      return send(ctx, request, reply, 200, recordOf(family, await findBackup(ctx, team, id, backupId)));
    },
  });

  app.delete(`${base}/:backup_id`, {
    config,
    schema: {
      tags,
      operationId: `delete${noun}Backup`,
      summary: `Delete a backup of a ${title}`,
      description: '200 with the backup `deleted`; it is then gone. 409 resource_busy while it is being taken or restored.',
      params: BackupParams,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id, backup_id: backupId } = request.params;
      const { team, key } = principalOf(request);
      await findResource(ctx, source.family, team, id);
      const backup = await findBackup(ctx, team, id, backupId);
      if (backup.status.status === 'deleted') return send(ctx, request, reply, 200, recordOf(family, backup));
      if (backup.status.status === 'creating') throw resourceBusy('The backup is still being taken; try again when it is done.');
      if (restorePending(backup) || backup.status.restore_state === 'restoring') throw resourceBusy('The backup is being restored; try again when it is done.');
      const moved = await writeAndAwait<Backup>(
        ctx.store,
        family.kind,
        team,
        backupId,
        () => ctx.writer.requestDeletion(family, team, backupId, key),
        (b) => b.status.status === 'deleted',
      );
      const deleted = moved ?? { ...backup, status: { ...backup.status, status: 'deleted', deleted_at: nowIso() } };
      return send(ctx, request, reply, 200, recordOf(family, deleted));
    },
  });
}

/** POST /servers/{id}/restore: a completed backup written back onto its server. */
export function registerServerRestoreRoute(app: ApiApp, ctx: ApiContext): void {
  app.post(`/api/v1/${serverFamily.path}/:id/restore`, {
    config,
    schema: {
      tags,
      operationId: 'restoreServer',
      summary: 'Restore a backup onto its server',
      description:
        'Writes a completed backup of this server back onto its disk. Answers 200 with the backup, `restore_status` `restoring`; the server is `restoring` until it is done (stop, start, reboot, PATCH, DELETE and backups answer 409 resource_busy meanwhile), then running again (events backup.restore_started, backup.restore_completed). 404 backup_not_found for an unknown backup, 422 validation_failed for a backup of another server, 409 resource_busy while the backup is being taken or another restore runs, 409 invalid_state for a failed backup or a server that is not running.',
      params: ServerParams,
      querystring: DryRunQuery,
      body: RestoreBody,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { backup_id: backupId } = request.body;
      const { team, key } = principalOf(request);
      const server = await findResource<Server>(ctx, serverFamily, team, id);
      const backup = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
      if (!backup || !isVisible(backup)) throw notFound(family.name, backupId);
      if (backup.spec.server_id !== id) {
        const of = sourceOf(backup.spec);
        throw fieldInvalid('backup_id', `is a backup of ${of ? `${of.family} ${of.id}` : 'no single source'}, not of server ${id}`);
      }
      assertRestoreAllowed(server, backup, await completedBackupsOf(ctx, team, id));
      const change = (latest: Backup) => {
        assertRestoreAllowed(server, latest, []);
        return { ...latest.spec, restore_requests: (asStored(latest.spec).restore_requests ?? 0) + 1 };
      };
      // The restore begun, shown should the reconciler not have written it yet.
      const begun = (requested: Backup): Backup => ({
        ...requested,
        status: { ...requested.status, restore_state: 'restoring' as const, restore_started_at: nowIso(), restore_finished_at: null },
      });
      if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, begun(previewSpecChange(backup, change)));
      let asked = backup;
      const ask = async () => {
        asked = await ctx.writer.mutateSpec<Backup>(family, team, backupId, change, key);
      };
      // Answered once the server shows the restore, so that a stop sent next is refused.
      await writeAndAwait<Server>(ctx.store, serverFamily.kind, team, id, ask, (s) => s.status.status === 'restoring');
      const latest = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
      const shown = latest && (latest.status.restore_state === 'restoring' || !restorePending(latest)) ? latest : begun(asked);
      return send(ctx, request, reply, 200, recordOf(family, shown));
    },
  });
}

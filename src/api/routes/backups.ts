/**
 * Server backups: take one (POST /servers/{id}/backups), list and read a server's backups,
 * delete one, and restore one onto its server (POST /servers/{id}/restore). Each records
 * what is wanted (a new backup, a deletion, a restore request on the backup's spec); the
 * backup controller carries it out (controllers/backup.ts).
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, isVisible, principalOf } from './families';
import { listPage, listQueryOf, listQuerySchema } from '../list';
import { writeAndAwait } from '../awaiting';
import { Backup, backupFamily as family, restorePending } from '../../resources/backup';
import { Server, serverFamily } from '../../resources/server';
import { fieldInvalid, invalidState, notFound, resourceBusy } from '../../lib/errors';
import { nowIso } from '../../lib/time';
import { listedArray } from '../../store/listed';
import type { ApiApp } from '../api-app';
import { ruleContextOf } from '../../events/catalog';
import { asStored } from '../../resources/family';
import { fieldOf } from '../../lib/unknown-values';

const config = { family: family.name };
const tags = [family.title];
const ServerParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Server id.' }) });
const BackupParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Server id.' }),
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

/** A backup of this server, or 404 backup_not_found (one of another server is not found here). */
async function findBackup(ctx: ApiContext, team: string, serverId: string, backupId: string): Promise<Backup> {
  const backup = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
  if (!backup || !isVisible(backup) || backup.spec.server_id !== serverId) throw notFound(family.name, backupId);
  return backup;
}

/** A server that can be backed up: provisioned, not moving, not deleted. */
function assertBackupAllowed(server: Server): void {
  if (server.status.status === 'creating') throw resourceBusy('The server is still being created; back it up once it is running.');
  assertChangeable(serverFamily, server);
  if (server.status.status === 'failed') throw invalidState('The server failed; there is nothing to back up.');
}

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

const defaultName = (server: Server) => `${server.spec.name}-${nowIso().replace(/[-:]|\.\d+Z$/g, '')}Z`;

export function registerBackupRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${serverFamily.path}/:id/backups`;

  app.post(base, {
    config,
    schema: {
      tags,
      operationId: 'createServerBackup',
      summary: 'Back up a server',
      description:
        "Starts a backup of the server's disk: 201 with the backup `creating`, then `completed` or `failed` (events backup.created, backup.completed, backup.failed). The server must be running or stopped: 409 resource_busy while it is being created or in a transient state, 409 invalid_state once deleted or failed.",
      params: ServerParams,
      body: family.schemas.create,
      response: { 201: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const server = await findResource<Server>(ctx, serverFamily, team, id);
      assertBackupAllowed(server);
      // The family's create schema let only a string through; without a body, the default name.
      const name = fieldOf(request.body, 'name');
      const spec = family.specFromCreate(
        { name: typeof name === 'string' ? name : defaultName(server), server_id: id, trigger: 'manual' },
        ruleContextOf(ctx.config),
      );
      const backup = (await ctx.writer.create(family, team, spec, key)) as Backup;
      reply.header('Location', `/api/v1/${serverFamily.path}/${id}/backups/${backup.meta.id}`);
      return send(ctx, request, reply, 201, family.toRecord(backup));
    },
  });

  app.get(base, {
    config,
    schema: {
      tags,
      operationId: 'listServerBackups',
      summary: "List a server's backups",
      description: 'Newest first by default; paged and filtered like every list.',
      params: ServerParams,
      querystring: listQuerySchema(family.states),
      response: { 200: envelopeOf(Type.Array(Record)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      await findResource<Server>(ctx, serverFamily, team, id);
      const { page, nextCursor } = await listPage(ctx.store, family, team, listQueryOf(request), ctx.cursorKey, { where: { server_id: id } });
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((b) => family.toRecord(b)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${base}/:backup_id`, {
    config,
    schema: {
      tags,
      operationId: 'getServerBackup',
      summary: 'Get a backup of a server',
      params: BackupParams,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id, backup_id: backupId } = request.params;
      const { team } = principalOf(request);
      await findResource<Server>(ctx, serverFamily, team, id);
      return send(ctx, request, reply, 200, family.toRecord(await findBackup(ctx, team, id, backupId)));
    },
  });

  app.delete(`${base}/:backup_id`, {
    config,
    schema: {
      tags,
      operationId: 'deleteServerBackup',
      summary: 'Delete a backup of a server',
      description: '200 with the backup `deleted`; it is then gone. 409 resource_busy while it is being taken or restored.',
      params: BackupParams,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id, backup_id: backupId } = request.params;
      const { team, key } = principalOf(request);
      await findResource<Server>(ctx, serverFamily, team, id);
      const backup = await findBackup(ctx, team, id, backupId);
      if (backup.status.status === 'deleted') return send(ctx, request, reply, 200, family.toRecord(backup));
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
      return send(ctx, request, reply, 200, family.toRecord(deleted));
    },
  });

  app.post(`/api/v1/${serverFamily.path}/:id/restore`, {
    config,
    schema: {
      tags,
      operationId: 'restoreServer',
      summary: 'Restore a backup onto its server',
      description:
        'Writes a completed backup of this server back onto its disk. Answers 200 with the backup, `restore_status` `restoring`; the server is `restoring` until it is done (stop, start, reboot, PATCH, DELETE and backups answer 409 resource_busy meanwhile), then running again (events backup.restore_started, backup.restore_completed). 404 backup_not_found for an unknown backup, 422 validation_failed for a backup of another server, 409 resource_busy while the backup is being taken or another restore runs, 409 invalid_state for a failed backup or a server that is not running.',
      params: ServerParams,
      body: RestoreBody,
      response: { 200: envelopeOf(Record), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { backup_id: backupId } = request.body;
      const { team } = principalOf(request);
      const server = await findResource<Server>(ctx, serverFamily, team, id);
      const backup = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
      if (!backup || !isVisible(backup)) throw notFound(family.name, backupId);
      if (backup.spec.server_id !== id) throw fieldInvalid('backup_id', `is a backup of server ${backup.spec.server_id}, not of ${id}`);
      assertRestoreAllowed(server, backup, await completedBackupsOf(ctx, team, id));
      let asked = backup;
      const ask = async () => {
        asked = await ctx.writer.mutateSpec<Backup>(family, team, backupId, (latest) => {
          assertRestoreAllowed(server, latest, []);
          return { ...latest.spec, restore_requests: (asStored(latest.spec).restore_requests ?? 0) + 1 };
        });
      };
      // Answered once the server shows the restore, so that a stop sent next is refused.
      await writeAndAwait<Server>(ctx.store, serverFamily.kind, team, id, ask, (s) => s.status.status === 'restoring');
      const latest = await ctx.store.get<Backup['spec'], Backup['status']>(family.kind, team, backupId);
      const shown =
        latest && (latest.status.restore_state === 'restoring' || !restorePending(latest))
          ? latest
          : { ...asked, status: { ...asked.status, restore_state: 'restoring' as const, restore_started_at: nowIso(), restore_finished_at: null } };
      return send(ctx, request, reply, 200, family.toRecord(shown));
    },
  });
}

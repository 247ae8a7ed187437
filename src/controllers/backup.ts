/**
 * Backups: take the copy through the backup driver, restore it onto its server when asked,
 * and delete backups whose source is gone. One reconciler per source family (servers,
 * databases), each with that family's backup driver and only its own backups; the server
 * one also fails a backup that names no single source. Status only moves forward: creating ->
 * completed | failed; a restore goes restoring -> succeeded | failed in `restore_state`
 * while the backup stays completed (resources/backup.ts). The server shows `restoring`
 * while a restore of one of its backups is due (controllers/server.ts).
 *
 * Every step is one status write, and what the driver started is in that write
 * (status.external), so a crash anywhere resumes at the same step.
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import type { BackupDriver, BackupSubject, OperationProgress } from '../drivers/backup';
import { Backup, backupFamily, restorePending, sourceOf } from '../resources/backup';
import type { AnyFamily } from '../resources/family';
import { nowIso } from '../lib/time';
import { API_VERSION } from '../store/kubernetes/names';
import type { ReconcileResult, Reconciler } from './controller';
import { OUTBOX_POLL_MS } from '../events/write-timing';

const SYSTEM = 'system';
const RELEASE_POLL_MS = 1_000;

const subjectOf = (backup: Backup, sourceId: string): BackupSubject => {
  const object = backup.meta.object;
  return {
    id: backup.meta.id,
    team: backup.meta.team,
    source_id: sourceId,
    external: backup.status.external ?? null,
    owner: object ? { apiVersion: API_VERSION, kind: backupFamily.kind, name: object.name, uid: object.uid } : null,
  };
};

/** Whether a backup's source (a server, a database) is gone for it: removed, deleted, or being deleted. */
export const sourceGone = (source: { meta: { deletionTimestamp?: string }; status?: { status?: unknown } } | undefined): boolean =>
  !source || Boolean(source.meta.deletionTimestamp) || ['deleted', 'destroyed'].includes(String(source.status?.status));

export class BackupReconciler implements Reconciler {
  readonly kind = backupFamily.kind;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    private readonly driver: BackupDriver,
    /** The family whose resources these backups are of: servers, or databases. */
    private readonly source: AnyFamily,
  ) {}

  /** A source's deletion calls for a look at its backups. */
  watchExternal(changed: (team: string, id: string) => void): () => void {
    return this.store.watch(({ object }) => {
      if (object.meta.kind !== this.source.kind || !sourceGone(object)) return;
      const { team, id } = object.meta;
      void this.store
        .list<Backup['spec'], Backup['status']>(this.kind, team)
        .then((backups) => {
          for (const b of backups) if (sourceOf(b.spec)?.id === id) changed(team, b.meta.id);
        })
        .catch(() => undefined); // The periodic resync looks again.
    });
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const backup = await this.store.get<Backup['spec'], Backup['status']>(this.kind, team, id);
    if (!backup) return;
    const source = sourceOf(backup.spec);
    if (!source) return this.sourceless(backup);
    // Another source family's backup: its own reconciler takes it.
    if (source.family !== this.source.name) return;
    if (backup.meta.deletionTimestamp) return this.reconcileDeletion(backup, source.id);
    // Backups belong to their source: they go with it.
    if (sourceGone(await this.store.get(this.source.kind, team, source.id))) {
      await this.writer.requestDeletion(backupFamily, team, id, SYSTEM);
      return;
    }
    if (backup.status.status === 'creating') return this.take(backup, source.id);
    if (backup.status.status === 'completed' && (restorePending(backup) || backup.status.restore_state === 'restoring')) return this.restore(backup, source.id);
  }

  /** A backup naming no single source (a custom resource written by hand): the server reconciler fails it, or lets its deletion finish. */
  private async sourceless(backup: Backup): Promise<ReconcileResult | undefined> {
    if (this.source.name !== 'server') return;
    if (backup.meta.deletionTimestamp) return this.reconcileDeletion(backup, '');
    if (backup.status.status === 'creating')
      await this.write(backup, { status: 'failed', status_reason: 'The backup names no source: give exactly one of server_id and database_id.' });
  }

  private async take(backup: Backup, sourceId: string): Promise<ReconcileResult | undefined> {
    if (!backup.status.external) {
      const external = await this.driver.start(subjectOf(backup, sourceId));
      backup = await this.write(backup, { external, method: typeof external.method === 'string' ? external.method : null });
      if (backup.status.status !== 'creating') return;
    }
    const progress = await this.driver.observe(subjectOf(backup, sourceId));
    if (progress.state === 'pending') return { requeueAfterMs: Math.max(1, progress.pollAfterMs) };
    await this.write(
      backup,
      this.outcome(progress, { status: 'completed', completed_at: nowIso(), status_reason: null }, (reason) => ({
        status: 'failed',
        status_reason: `The backup failed: ${reason}.`,
      })),
    );
  }

  /** A restore due is begun (restore_started), then followed to its end (restore_completed). */
  private async restore(backup: Backup, sourceId: string): Promise<ReconcileResult | undefined> {
    if (backup.status.restore_state !== 'restoring') {
      const startedAt = nowIso();
      const external = await this.driver.startRestore(subjectOf(backup, sourceId), startedAt);
      backup = await this.write(backup, {
        external,
        restore_state: 'restoring',
        restore_started_at: startedAt,
        restore_finished_at: null,
        observed_generation: backup.meta.generation,
      });
      if (backup.status.restore_state !== 'restoring') return;
    }
    const progress = await this.driver.observeRestore(subjectOf(backup, sourceId));
    if (progress.state === 'pending') return { requeueAfterMs: Math.max(1, progress.pollAfterMs) };
    // Every request made up to now is settled by this restore: the disk holds the backup.
    const settled = { restores_done: backup.spec.restore_requests, restore_finished_at: nowIso() };
    await this.write(
      backup,
      this.outcome(progress, { ...settled, restore_state: 'succeeded', status_reason: null }, (reason) => ({
        ...settled,
        restore_state: 'failed',
        status_reason: `The last restore failed: ${reason}.`,
      })),
    );
  }

  private outcome(
    progress: Exclude<OperationProgress, { state: 'pending' }>,
    succeeded: Record<string, unknown>,
    failed: (reason: string) => Record<string, unknown>,
  ): Record<string, unknown> {
    return progress.state === 'succeeded' ? succeeded : failed(progress.reason);
  }

  /** `deleted`, then what the driver holds is freed, then the record goes once its events are on the bus. */
  private async reconcileDeletion(backup: Backup, sourceId: string): Promise<ReconcileResult | undefined> {
    const { meta, status } = backup;
    if (status.status !== 'deleted') {
      await this.writer.mutateStatus<Backup>(backupFamily, meta.team, meta.id, () => ({ status: 'deleted', deleted_at: nowIso() }), SYSTEM);
      return;
    }
    if (status.external !== undefined) {
      if (!(await this.driver.release(subjectOf(backup, sourceId)))) return { requeueAfterMs: RELEASE_POLL_MS };
      await this.writer.mutateStatus<Backup>(backupFamily, meta.team, meta.id, () => ({ external: undefined }), SYSTEM);
      return;
    }
    if (!this.writer.relayed(backup)) return { requeueAfterMs: OUTBOX_POLL_MS };
    await this.store.remove(this.kind, meta.team, meta.id, meta.resourceVersion);
  }

  /** Writes unless the backup moved on (another state, a deletion) since it was read. */
  private write(backup: Backup, changes: Record<string, unknown>): Promise<Backup> {
    const { meta, status } = backup;
    return this.writer.mutateStatus<Backup>(
      backupFamily,
      meta.team,
      meta.id,
      (latest) =>
        latest.status.status === status.status && latest.status.restore_state === status.restore_state && !latest.meta.deletionTimestamp ? changes : null,
      SYSTEM,
    );
  }
}

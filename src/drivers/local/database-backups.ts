/**
 * Backups of the local driver's databases: a backup is a pg_basebackup of the primary (its
 * data directory, WAL included, so it starts on its own), kept under
 * `backups/<backup id>/data` of the databases' directory and marked complete once whole. It is restored
 * into a new database, whose primary starts from a copy of it (LocalDatabaseDriver); a
 * restore onto the database it came from is not offered.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BackupDriver, BackupSubject, OperationProgress } from '../backup';
import type { DriverHealth, ExternalRecord } from '../types';
import { ADMIN_USER } from '../../resources/database';
import { postmasterOf, type PostgresHost } from './postgres-host';

/** Written beside a backup's copy once it is whole: the major it holds. */
const COMPLETE = 'complete.json';
const POLL_MS = 500;

const backupDirOf = (host: PostgresHost, id: string) => path.join(host.root, 'backups', id);

/** The data directory a whole backup holds, or null when there is none here. */
export function backupDataOf(host: PostgresHost, id: string): string | null {
  const dir = backupDirOf(host, id);
  return fs.existsSync(path.join(dir, COMPLETE)) ? path.join(dir, 'data') : null;
}

export class LocalDatabaseBackups implements BackupDriver {
  constructor(private readonly host: PostgresHost) {}

  start(backup: BackupSubject): Promise<ExternalRecord> {
    const dir = backupDirOf(this.host, backup.id);
    const primary = path.join(this.host.root, backup.source_id, 'node-0');
    this.host.begin(backup.id, backup.team, 'backup', async () => {
      const port = postmasterOf(primary)?.port;
      if (!port) throw new Error(`database ${backup.source_id} is not running here`);
      const major = fs.readFileSync(path.join(primary, 'PG_VERSION'), 'utf8').trim();
      await fs.promises.rm(dir, { recursive: true, force: true });
      await this.host.makeDir(dir);
      const sockets = path.join(this.host.root, backup.source_id, 'sockets');
      await this.host.program(this.host.binOf(major), 'pg_basebackup', [
        '-D',
        path.join(dir, 'data'),
        '-h',
        sockets,
        '-p',
        String(port),
        '-U',
        ADMIN_USER,
        '-X',
        'stream',
        '-c',
        'fast',
      ]);
      await fs.promises.writeFile(path.join(dir, COMPLETE), JSON.stringify({ major }));
    });
    return Promise.resolve({ method: 'pg_basebackup' });
  }

  observe(backup: BackupSubject): Promise<OperationProgress> {
    const work = this.host.workOf(backup.id);
    if (work && !work.done) return Promise.resolve({ state: 'pending', pollAfterMs: POLL_MS });
    if (work?.failure) return Promise.resolve({ state: 'failed', reason: work.failure });
    return Promise.resolve(
      backupDataOf(this.host, backup.id)
        ? { state: 'succeeded' }
        : { state: 'failed', reason: 'the copy was interrupted (the service stopped while it was taken)' },
    );
  }

  startRestore(backup: BackupSubject): Promise<ExternalRecord> {
    return Promise.resolve(backup.external ?? {});
  }

  observeRestore(): Promise<OperationProgress> {
    return Promise.resolve({ state: 'failed', reason: 'a database backup is restored into a new database (POST /api/v1/databases with backup_restore)' });
  }

  async release(backup: BackupSubject): Promise<boolean> {
    if (this.host.workOf(backup.id)?.done === false) return false;
    await fs.promises.rm(backupDirOf(this.host, backup.id), { recursive: true, force: true });
    return true;
  }

  health(): DriverHealth {
    return this.host.health();
  }
}

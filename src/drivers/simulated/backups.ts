/**
 * Simulated backups: taking a copy and restoring it each take half the backup family's
 * simulated time (CLOUDPLANE_SIM_DELAYS `backup=`, else CLOUDPLANE_SIM_DELAY_MS) and fail
 * at its rate (CLOUDPLANE_SIM_FAILURES `backup=`), decided when the operation starts and
 * kept in the backup's record, as every simulated operation.
 */
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { BackupDriver, BackupSubject, OperationProgress } from '../backup';
import type { DriverHealth, ExternalRecord } from '../types';
import type { Simulation } from './simulation';
import { promised } from '../../lib/promised';

const FAMILY = 'backup';

/** An operation as `begin` records it; anything else in its place was not started here. */
const RecordedOperation = Type.Object({
  name: Type.String(),
  started_at: Type.String(),
  fails: Type.Optional(Type.Boolean()),
  reason: Type.Optional(Type.String()),
  duration_ms: Type.Optional(Type.Integer({ minimum: 0 })),
});

export class SimulatedBackupDriver implements BackupDriver {
  constructor(private readonly sim: Simulation) {}

  async start(backup: BackupSubject): Promise<ExternalRecord> {
    return { method: 'simulated', snapshot: { ...(await this.sim.begin(FAMILY, backup.team, backup.id, 'snapshot')) } };
  }

  observe(backup: BackupSubject): Promise<OperationProgress> {
    return promised(() => this.progressOf(backup, 'snapshot'));
  }

  async startRestore(backup: BackupSubject, startedAt: string): Promise<ExternalRecord> {
    return { ...backup.external, restore: { ...(await this.sim.begin(FAMILY, backup.team, backup.id, 'restore', startedAt)) } };
  }

  observeRestore(backup: BackupSubject): Promise<OperationProgress> {
    return promised(() => this.progressOf(backup, 'restore'));
  }

  release(): Promise<boolean> {
    return Promise.resolve(true);
  }

  health(): DriverHealth {
    return this.sim.outcomesOf(FAMILY).health();
  }

  private progressOf(backup: BackupSubject, name: string): OperationProgress {
    const op = backup.external?.[name];
    if (!Value.Check(RecordedOperation, op)) return { state: 'failed', reason: `the simulated ${name} was never started` };
    const progress = this.sim.progress(FAMILY, backup.id, op);
    return progress.state === 'pending' ? { state: 'pending', pollAfterMs: progress.remainingMs } : progress;
  }
}

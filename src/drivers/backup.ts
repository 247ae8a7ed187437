/**
 * The backup driver's contract. A backup is a copy taken once (of a server's disk, of a
 * database), and a restore puts it back onto its server, so the driver is an executor of two operations, each started once and
 * then observed to its end: start/observe take the copy, startRestore/observeRestore put
 * it back, release frees what the copy holds. What a driver needs to remember (how it took
 * the copy, the name of a VolumeSnapshot, when an operation began) it returns as an
 * ExternalRecord the controller keeps in the backup's status and hands back on every call,
 * so a driver keeps nothing a restart would lose.
 */
import type { DriverHealth, ExternalRecord, Owner } from './types';

/** A backup as its driver sees it. */
export interface BackupSubject {
  id: string;
  team: string;
  /** What it is a copy of: the server, or the database (the driver is that family's). */
  source_id: string;
  /** The driver's record of its calls for this backup; null before start. */
  external: ExternalRecord | null;
  /** The ServerBackup custom resource, owner of what a driver makes (cluster mode); null in the embedded store. */
  owner: Owner | null;
}

export type OperationProgress = { state: 'pending'; pollAfterMs: number } | { state: 'succeeded' } | { state: 'failed'; reason: string };

export interface BackupDriver {
  /** Starts taking the copy; returns the record to keep, with `method` (simulated, volume_snapshot). Called once: the controller keeps what it returns. */
  start(backup: BackupSubject): Promise<ExternalRecord>;
  /** How the copy stands now. */
  observe(backup: BackupSubject): Promise<OperationProgress>;
  /** Starts restoring the copy onto its server; returns the record to keep. Called once per restore. */
  startRestore(backup: BackupSubject, startedAt: string): Promise<ExternalRecord>;
  /** How the restore started last stands now. */
  observeRestore(backup: BackupSubject): Promise<OperationProgress>;
  /** Frees what the copy holds; true once nothing is left. Idempotent. */
  release(backup: BackupSubject): Promise<boolean>;
  health(): DriverHealth;
}

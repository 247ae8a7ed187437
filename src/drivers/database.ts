/** The database drivers' contract: a PostgreSQL primary and its standbys, and how a client reaches them. */
import type { DatabaseConnection, DatabaseSpec } from '../resources/database';
import type { Driver } from './types';
import type { BackupDriver } from './backup';

/** A user as a driver is asked for it: with its password read from its store secret. */
export interface DesiredUser {
  name: string;
  password_version: number;
  /** Null only while the secret cannot be read; the driver leaves the user's password as it was. */
  password: string | null;
}

/**
 * What a database driver is asked for: the spec, with the passwords read from their store
 * secrets and the trusted sources resolved to address blocks.
 */
export interface DatabaseDesired extends Omit<DatabaseSpec, 'users'> {
  /** Null only while the secret cannot be read; a driver makes nothing without it. */
  password: string | null;
  users: DesiredUser[];
  /** IPv4 blocks allowed to connect (`203.0.113.7/32`), servers by their address; null: anyone. */
  trusted_blocks: string[] | null;
}

export interface DatabaseOutputs {
  connection: DatabaseConnection;
  /** The major version that runs. */
  version: string;
}

/** What a running database shows beyond its outputs. */
export interface DatabaseObserved {
  /** Standbys following the primary. */
  standby_nodes: number;
}

/** A database driver, with the driver of its databases' backups (a database is restored into a new one, by its create). */
export interface DatabaseDriver extends Driver<DatabaseDesired, DatabaseOutputs, DatabaseObserved> {
  readonly backups: BackupDriver;
}

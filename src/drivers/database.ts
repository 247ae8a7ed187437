/** The database drivers' contract: a PostgreSQL primary and its standbys, and how a client reaches them. */
import type { DatabaseConnection, DatabaseSpec } from '../resources/database';
import type { Driver } from './types';

/** What a database driver is asked for: the spec, with the administrator's password read from its store secret. */
export interface DatabaseDesired extends DatabaseSpec {
  /** Null only while the secret cannot be read; a driver makes nothing without it. */
  password: string | null;
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

export type DatabaseDriver = Driver<DatabaseDesired, DatabaseOutputs, DatabaseObserved>;

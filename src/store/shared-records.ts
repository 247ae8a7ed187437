/**
 * Small records every replica reads and changes by compare-and-swap: the counts that must
 * hold across replicas (a team's quota claims, a key's rate-limit window). One process
 * needs none (its own memory is the whole count); several replicas get them from NATS
 * JetStream (nats-shared-records.ts), which the chart requires beyond one replica.
 */
import type { Logger } from 'pino';
import { textOf } from '../lib/unknown-values';

export interface SharedRecord {
  data: Record<string, string>;
  /** What `swap` must find to write: any write in between changes it. */
  revision: number;
}

export interface SharedRecords {
  read(name: string): Promise<SharedRecord | undefined>;
  /**
   * Writes `data` if the record is still as `expected` was read (undefined: absent);
   * answers false when another writer came first. Throws when the records cannot be reached.
   */
  swap(name: string, expected: SharedRecord | undefined, data: Record<string, string>): Promise<boolean>;
}

/** A record name: the characters every backend accepts in a key, parts joined by dots. */
export const recordName = (...parts: string[]) => parts.map((part) => part.replace(/[^A-Za-z0-9_-]/g, '_')).join('.');

/** A count that fell back to the replica's own is logged at most this often (each request may meet it). */
const FALLBACK_LOG_MS = 60_000;

/** Logs that `what` are counted by this replica alone while the shared records cannot be reached; once a minute at most. */
export function warnOfOwnCounts(logger: Logger, what: string): (err: unknown) => void {
  let lastLogged = 0;
  return (err) => {
    const now = Date.now();
    if (now - lastLogged < FALLBACK_LOG_MS) return;
    lastLogged = now;
    logger.warn({ err: textOf(err) }, `the records the replicas share (NATS) cannot be reached: ${what} are counted by this replica alone for now`);
  };
}

/**
 * The kinds of named entries kept beside the resources (types.ts, NamedEntries), each
 * declared by the module that keeps it: whether it is sealed (a secret) or a plain record,
 * and what ends it (its owning resource, an expiry, or its module's own upkeep). The
 * leader's sweep (controllers/record-sweeper.ts) iterates the kinds it is handed and knows
 * no module's names.
 */
import type { NamedEntries, Store, StoredEntry, StoredObject } from './types';

export interface RecordKind {
  /** Every entry of the kind is named `<prefix>…`. */
  prefix: string;
  /** A secret (store.secrets: sealed at rest, a Secret in Kubernetes), or a plain record (store.records: a ConfigMap). */
  sealed: boolean;
  /**
   * The resource the entry belongs to: the entry goes (after a grace) once that resource
   * does not exist or no longer needs it. null when the entry does not say (it is left alone).
   */
  owner?(entry: StoredEntry): { kind: string; id: string } | null;
  /** Whether an existing owner still needs this entry of its (a database still has the user whose password it is); always, without this. */
  needs?(owner: StoredObject<unknown, { status?: string }>, entry: StoredEntry): boolean;
  /** Whether the entry has expired at `now` (epoch ms) and may go. */
  expired?(entry: StoredEntry, now: number): boolean;
  /** For a kind with neither an owner nor an expiry: who removes its entries, and when. */
  keptBy?: string;
}

/** The owner of an entry named `<prefix><owner's id>`. */
export const ownedByName =
  (kind: string, prefix: string) =>
  (entry: StoredEntry): { kind: string; id: string } => ({ kind, id: entry.name.slice(prefix.length) });

/** Where the entries of a kind are kept. */
export const entriesOf = (store: Pick<Store, 'secrets' | 'records'>, kind: Pick<RecordKind, 'sealed'>): NamedEntries =>
  kind.sealed ? store.secrets : store.records;

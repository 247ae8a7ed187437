/**
 * Secrets' names kept in order (name, then team), so that `secrets.list(prefix)` is a range
 * of names, O(log N + matches), rather than a scan of every secret. At 100,000 load
 * balancers (a usage record each) the scan of the usage thresholds' check held the event
 * loop about 240 ms on every run, and the authenticator scanned once for every unknown API
 * key a client sent.
 */
import BTree from 'sorted-btree';
import { getOrCreate } from '../lib/maps';

/** The separator sorts below every character of a name, so a name's teams sort together right after it. */
const positionOf = (team: string, name: string) => `${name}\u0000${team}`;

/** Something per secret (the secret, or where a store keeps it) in order of name, then team. */
export class SecretNameOrder<T> {
  private readonly byName = new BTree<string, T>();

  set(team: string, name: string, value: T): void {
    this.byName.set(positionOf(team, name), value);
  }

  delete(team: string, name: string): void {
    this.byName.delete(positionOf(team, name));
  }

  clear(): void {
    this.byName.clear();
  }

  /** The values of the names that start with `prefix`, by name. */
  *withPrefix(prefix: string): Generator<T> {
    // Every name with the prefix sorts at or after the prefix itself, and they are contiguous.
    for (const [position, value] of this.byName.entries(prefix)) {
      if (!position.startsWith(prefix)) return;
      yield value;
    }
  }
}

/** A store's secrets by key (`team/name`), and in name order: for a store with no other map of them. */
export class SecretTable<T extends { readonly team: string; readonly name: string }> {
  private readonly byKey = new Map<string, T>();
  private readonly names = new SecretNameOrder<T>();
  /** team -> keys of its secrets: a team's namespace is relisted (or goes) on its own. */
  private readonly byTeam = new Map<string, Set<string>>();

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): T | undefined {
    return this.byKey.get(key);
  }

  set(key: string, entry: T): void {
    const previous = this.byKey.get(key);
    if (previous && previous.team !== entry.team) this.delete(key);
    this.byKey.set(key, entry);
    this.names.set(entry.team, entry.name, entry);
    getOrCreate(this.byTeam, entry.team, () => new Set()).add(key);
  }

  delete(key: string): void {
    const entry = this.byKey.get(key);
    if (!entry) return;
    this.byKey.delete(key);
    this.names.delete(entry.team, entry.name);
    const keys = this.byTeam.get(entry.team);
    keys?.delete(key);
    if (keys?.size === 0) this.byTeam.delete(entry.team);
  }

  /** The keys of one team's secrets. */
  keysOf(team: string): string[] {
    return [...(this.byTeam.get(team) ?? [])];
  }

  clear(): void {
    this.byKey.clear();
    this.names.clear();
    this.byTeam.clear();
  }

  /** The entries whose name starts with `prefix`, by name. */
  withPrefix(prefix: string): Generator<T> {
    return this.names.withPrefix(prefix);
  }
}

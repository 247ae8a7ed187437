/**
 * A store's secrets by key, with their names kept in order (name, then team), so that
 * `listSecrets(prefix)` is a range of names, O(log N + matches), rather than a scan of
 * every secret. At 100,000 load balancers (a usage record each) the scan of the usage
 * thresholds' check held the event loop about 240 ms on every run, and the authenticator
 * scanned once for every unknown API key a client sent.
 */
import BTree from 'sorted-btree';

export class SecretTable<T extends { readonly team: string; readonly name: string }> {
  private readonly byKey = new Map<string, T>();
  private readonly byName = new BTree<string, T>();

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): T | undefined {
    return this.byKey.get(key);
  }

  set(key: string, entry: T): void {
    this.byKey.set(key, entry);
    this.byName.set(positionOf(entry), entry);
  }

  delete(key: string): void {
    const entry = this.byKey.get(key);
    if (!entry) return;
    this.byKey.delete(key);
    this.byName.delete(positionOf(entry));
  }

  clear(): void {
    this.byKey.clear();
    this.byName.clear();
  }

  /** The entries whose name starts with `prefix`, by name. */
  *withPrefix(prefix: string): Generator<T> {
    // Every name with the prefix sorts at or after the prefix itself, and they are contiguous.
    for (const [position, entry] of this.byName.entries(prefix)) {
      if (!position.startsWith(prefix)) return;
      yield entry;
    }
  }
}

/** The separator sorts below every character of a name, so a name's teams sort together right after it. */
const positionOf = ({ team, name }: { team: string; name: string }) => `${name}\u0000${team}`;

/**
 * The embedded store's named entries (types.ts, NamedEntries): each one an object of a
 * reserved kind in the store's log, beside the resources. Secrets' data is sealed before
 * it is written (secret-box.ts); records' is kept as it is. Their names are kept in order
 * (secret-table.ts) so that a list by prefix is a range, not a scan.
 */
import { SecretNameOrder } from './secret-table';
import { sameJson } from '../lib/canonical-json';
import { nowIso } from '../lib/time';
import { promised } from '../lib/promised';
import type { NamedEntries, StoredEntry, StoredObject } from './types';

/** What the entries need of the store that holds them. */
export interface EntryHost {
  latest(key: string): StoredObject | undefined;
  /** Runs `write` once no write of `key` is in flight (the store's serialisation of one object's writes). */
  exclusive<T>(key: string, write: () => Promise<T>): Promise<T>;
  /** Writes `object` as the key's next state, or removes the key (null); the caller holds `exclusive(key)`. */
  commit(key: string, object: StoredObject<object, object> | null): Promise<void>;
  keyOf(kind: string, team: string, id: string): string;
}

/** How an entry's data is kept in its object's spec. */
export interface EntryCodec {
  encode(team: string, name: string, data: Record<string, string>): object;
  decode(object: StoredObject): Record<string, string>;
}

export class EmbeddedEntries implements NamedEntries {
  /** Each entry's key in order of its name, for list(). */
  private readonly names = new SecretNameOrder<string>();

  constructor(
    /** The reserved kind of the entries' objects. */
    readonly kind: string,
    private readonly host: EntryHost,
    private readonly codec: EntryCodec,
  ) {}

  /** Keeps the name order in step with the store's objects (called for every object of the kind applied). */
  applied(key: string, value: StoredObject | null, previous: StoredObject | undefined): void {
    if (value) this.names.set(value.meta.team, value.meta.id, key);
    else if (previous) this.names.delete(previous.meta.team, previous.meta.id);
  }

  get(team: string, name: string): Promise<Record<string, string> | undefined> {
    // Decoding may throw (a secret that does not open): as the promise's rejection.
    return promised(() => {
      const object = this.host.latest(this.host.keyOf(this.kind, team, name));
      return object ? this.codec.decode(object) : undefined;
    });
  }

  async put(team: string, name: string, data: Record<string, string>): Promise<void> {
    const key = this.host.keyOf(this.kind, team, name);
    await this.host.exclusive(key, () => this.write(key, team, name, data));
  }

  async add(team: string, name: string, data: Record<string, string>): Promise<Record<string, string>> {
    const key = this.host.keyOf(this.kind, team, name);
    let stored = data;
    await this.host.exclusive(key, async () => {
      const existing = this.host.latest(key);
      if (existing) {
        stored = this.codec.decode(existing);
        return;
      }
      await this.write(key, team, name, data);
    });
    return { ...stored };
  }

  swap(team: string, name: string, expected: Record<string, string>, data: Record<string, string>): Promise<boolean> {
    const key = this.host.keyOf(this.kind, team, name);
    return this.host.exclusive(key, async () => {
      const existing = this.host.latest(key);
      if (!existing || !sameJson(this.codec.decode(existing), expected)) return false;
      await this.write(key, team, name, data);
      return true;
    });
  }

  async delete(team: string, name: string): Promise<void> {
    const key = this.host.keyOf(this.kind, team, name);
    await this.host.exclusive(key, () => (this.host.latest(key) ? this.host.commit(key, null) : Promise.resolve()));
  }

  list(prefix: string): Promise<StoredEntry[]> {
    return promised(() => {
      const entries: StoredEntry[] = [];
      for (const key of this.names.withPrefix(prefix)) {
        const object = this.host.latest(key);
        if (object) entries.push({ team: object.meta.team, name: object.meta.id, data: this.codec.decode(object), createdAt: object.meta.createdAt });
      }
      return entries;
    });
  }

  /** Encodes `data` and writes it as the entry `key`; the caller holds `exclusive(key)`. */
  write(key: string, team: string, name: string, data: Record<string, string>): Promise<void> {
    const existing = this.host.latest(key);
    const now = nowIso();
    const meta = existing
      ? { ...existing.meta, generation: existing.meta.generation + 1, updatedAt: now }
      : { kind: this.kind, id: name, team, labels: {}, generation: 1, createdAt: now, updatedAt: now, resourceVersion: '' };
    return this.host.commit(key, { meta, spec: this.codec.encode(team, name, data), status: {} });
  }
}

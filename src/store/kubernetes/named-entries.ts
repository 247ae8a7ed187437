/**
 * The Kubernetes store's named entries (store/types.ts, NamedEntries): one object each, in
 * its team's namespace (service-wide ones in the system namespace), labelled as the
 * store's, its store name in an annotation. Secrets are Secrets; records that are not
 * secret are ConfigMaps (entry-objects.ts). Reads are served from a table fed by a watch
 * of those objects in every team namespace; writes go to the API server and update the
 * table with the answer, so a client reads its own writes at once.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { NamedEntries, StoredEntry } from '../types';
import { SecretTable } from '../secret-table';
import { sameJson } from '../../lib/canonical-json';
import { httpCode } from './http-code';
import { asCached } from './cached-object';
import { NamespacedWatches } from './namespaced-watches';
import { namespaceOfTeam, teamOfNamespace } from './names';
import { isNewer, isOlder, laterVersion } from './resource-version';
import { EntryObject, EntryObjects } from './entry-objects';

interface Entry {
  team: string;
  name: string;
  data: Record<string, string>;
  raw: EntryObject;
}

/** What the entries need of the store that holds them. */
export interface EntriesContext {
  core: CoreV1Api;
  /** Namespace of service-wide entries (the cursor key). */
  systemNamespace: string;
  /** Runs a request, telling an API server that does not answer (503) from one that says no. */
  call: <T>(request: () => Promise<T>) => Promise<T>;
  /** Makes a team's namespace on its first write. */
  ensureNamespace: (namespace: string) => Promise<void>;
}

export class KubernetesEntries implements NamedEntries {
  private readonly entries = new SecretTable<Entry>();
  /**
   * `team/name` of entries this store removed, with the last resourceVersion seen: a watch
   * event of an earlier version that arrives late must not bring them back. Cleared by a
   * relist, which is authoritative.
   */
  private readonly tombstones = new Map<string, string>();
  private stopWatch: (() => void) | null = null;
  /** Set once the entries of every team namespace known at the start were listed; a namespace made later starts empty. */
  listed = false;

  constructor(
    private readonly o: EntriesContext,
    private readonly objects: EntryObjects,
  ) {}

  /** Watches the store's entries; resolves once those of every team namespace known now were listed. */
  async watch(watches: NamespacedWatches): Promise<void> {
    // The store's entries are labelled; they are watched in each team namespace (and the system one).
    const followed = watches.follow(this.objects.collection, {
      replace: (namespace, items) => {
        this.forgetEntriesOf(namespace);
        for (const item of items) this.upsert(item);
      },
      upsert: (item) => {
        this.upsert(item);
      },
      remove: (item) => {
        // The watch is in order and a deletion is an object's last event: no tombstone needed.
        this.entries.delete(this.keyOfObject(item));
        this.tombstones.delete(this.keyOfObject(item));
      },
      forget: (namespace) => {
        this.forgetEntriesOf(namespace);
      },
    });
    this.stopWatch = followed.stop;
    await followed.ready.then(() => (this.listed = true));
  }

  stop(): void {
    this.stopWatch?.();
  }

  /** Drops what is cached of a namespace's entries (it was relisted, or it is gone), and their tombstones. */
  private forgetEntriesOf(namespace: string): void {
    const team = teamOfNamespace(namespace, this.o.systemNamespace);
    for (const key of this.entries.keysOf(team)) this.entries.delete(key);
    for (const key of [...this.tombstones.keys()]) if (key.startsWith(`${team}/`)) this.tombstones.delete(key);
  }

  get(team: string, name: string): Promise<Record<string, string> | undefined> {
    const entry = this.entries.get(`${team}/${name}`);
    return Promise.resolve(entry ? { ...entry.data } : undefined);
  }

  // API call: store and drivers: secrets, written
  // API call: store: records, written
  async put(team: string, name: string, data: Record<string, string>): Promise<void> {
    const namespace = this.namespaceOf(team);
    await this.o.ensureNamespace(namespace);
    const existing = this.entries.get(`${team}/${name}`);
    this.tombstones.delete(`${team}/${name}`);
    const { objects, o } = this;
    const body = objects.body(name, namespace, data, existing?.raw.metadata?.resourceVersion);
    const objectName = body.metadata.name;
    let answer: EntryObject;
    try {
      answer = await o.call(() => (existing ? objects.replace(o.core, objectName, namespace, body) : objects.create(o.core, namespace, body)));
    } catch (err) {
      // Another writer got there first (or the cache lagged): write over what is there now.
      if (httpCode(err) !== 409) throw err;
      const current = await o.call(() => objects.read(o.core, objectName, namespace));
      const over = objects.body(name, namespace, data, current.metadata?.resourceVersion);
      answer = await o.call(() => objects.replace(o.core, objectName, namespace, over));
    }
    this.upsert(answer);
  }

  // API call: store and drivers: secrets, written
  // API call: store: records, written
  async add(team: string, name: string, data: Record<string, string>): Promise<Record<string, string>> {
    const cached = await this.get(team, name);
    if (cached) return cached;
    const namespace = this.namespaceOf(team);
    await this.o.ensureNamespace(namespace);
    const { objects, o } = this;
    const body = objects.body(name, namespace, data);
    let answer: EntryObject;
    try {
      answer = await o.call(() => objects.create(o.core, namespace, body));
    } catch (err) {
      // Another replica made it first: its data wins.
      if (httpCode(err) !== 409) throw err;
      answer = await o.call(() => objects.read(o.core, body.metadata.name, namespace));
    }
    this.tombstones.delete(`${team}/${name}`);
    this.upsert(answer);
    return objects.data(answer);
  }

  // API call: store and drivers: secrets, written
  // API call: store: records, written
  async swap(team: string, name: string, expected: Record<string, string>, data: Record<string, string>): Promise<boolean> {
    const namespace = this.namespaceOf(team);
    const { objects, o } = this;
    let current = this.entries.get(`${team}/${name}`)?.raw;
    for (;;) {
      if (!current || !sameJson(objects.data(current), expected)) return false;
      // The version read is the precondition: a write by anyone since then answers 409.
      const body = objects.body(name, namespace, data, current.metadata?.resourceVersion);
      try {
        this.upsert(await o.call(() => objects.replace(o.core, body.metadata.name, namespace, body)));
        return true;
      } catch (err) {
        if (httpCode(err) === 404) return this.forget(team, name, current);
        if (httpCode(err) !== 409) throw err;
      }
      try {
        current = await o.call(() => objects.read(o.core, body.metadata.name, namespace));
      } catch (err) {
        if (httpCode(err) === 404) return this.forget(team, name, current);
        throw err;
      }
      this.upsert(current);
    }
  }

  /** An entry the API server no longer has leaves the cache at once, not when the watch tells; returns false (nothing written). */
  private forget(team: string, name: string, lastSeen: EntryObject): false {
    this.entries.delete(`${team}/${name}`);
    this.tombstones.set(`${team}/${name}`, lastSeen.metadata?.resourceVersion ?? '0');
    return false;
  }

  // API call: store and drivers: secrets, written
  // API call: store: records, written
  async delete(team: string, name: string): Promise<void> {
    const namespace = this.namespaceOf(team);
    const { objects, o } = this;
    let version = this.entries.get(`${team}/${name}`)?.raw.metadata?.resourceVersion ?? '0';
    try {
      // The API server answers the deleted object (or a Status), whose metadata holds a resourceVersion.
      const answer = await o.call(() => objects.remove(o.core, objects.objectName(name), namespace));
      version = laterVersion(version, answer?.metadata?.resourceVersion);
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
    this.entries.delete(`${team}/${name}`);
    this.tombstones.set(`${team}/${name}`, version);
  }

  list(prefix: string): Promise<StoredEntry[]> {
    return Promise.resolve(
      [...this.entries.withPrefix(prefix)].map((entry) => ({
        team: entry.team,
        name: entry.name,
        data: { ...entry.data },
        createdAt: isoOf(entry.raw.metadata?.creationTimestamp),
      })),
    );
  }

  private upsert(raw: EntryObject): void {
    asCached(raw);
    const md = raw.metadata ?? {};
    const name = md.annotations?.[this.objects.nameAnnotation];
    if (!name) return;
    const data = this.objects.data(raw);
    const team = teamOfNamespace(md.namespace ?? '', this.o.systemNamespace);
    const version = md.resourceVersion ?? '';
    // A late watch event must not undo a write this store already saw answered, nor bring back a deleted entry.
    const current = this.entries.get(`${team}/${name}`);
    if (current && !isNewer(version, current.raw.metadata?.resourceVersion ?? '')) return;
    const removedAt = this.tombstones.get(`${team}/${name}`);
    if (removedAt !== undefined && !isOlder(removedAt, version)) return;
    this.entries.set(`${team}/${name}`, { team, name, data, raw });
  }

  private keyOfObject(raw: EntryObject): string {
    const md = raw.metadata ?? {};
    return `${teamOfNamespace(md.namespace ?? '', this.o.systemNamespace)}/${md.annotations?.[this.objects.nameAnnotation] ?? ''}`;
  }

  private namespaceOf(team: string): string {
    return namespaceOfTeam(team, this.o.systemNamespace);
  }
}

/** A metadata timestamp as ISO 8601: a string from a watch, a Date from the client's typed answers (never absent: it throws then). */
function isoOf(timestamp: string | Date | undefined): string {
  return new Date(timestamp ?? Number.NaN).toISOString();
}

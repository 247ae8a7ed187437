/**
 * The embedded store: every object in memory, every write in an fsynced append log,
 * compacted into a snapshot as the log grows. Memory holds where each object's JSON is in
 * those files, and the object parsed while in use (kept-records.ts). A
 * write resolves only once it is on disk, and only then becomes visible to readers and
 * watchers, so nothing that was seen or acknowledged can be lost by a crash. Secrets are sealed (secret-box.ts) before they
 * reach memory, the log or the snapshot, with a key kept outside both (encryption-key.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { EmbeddedEntries } from './embedded-entries';
import { AppendLog, lockDataDir, writeFileDurable } from './append-log';
import { readText } from '../lib/file-text';
import { DataDirHealth } from './data-dir-health';
import { BackgroundWrite, DEFAULT_RETRY } from './background-write';
import { nowIso } from '../lib/time';
import { sameJson } from '../lib/canonical-json';
import { onlyOutboxDiffers } from './outbox-only';
import { EncryptionKeys, loadKeyring } from './encryption-key';
import { isSealed, SecretBox, SecretKeyError } from './secret-box';
import { ListedKind } from './list-index';
import { ObjectCache } from './object-cache';
import { deepFreeze, KeptRecord, KeptRecords, RecordPlace } from './kept-records';
import { readSnapshot, snapshotText } from './snapshot-text';
import { WatchListeners } from './watch-listeners';
import { AlreadyExistsError, ConflictError, NewObject, NotFoundError, PersistenceState, readAs, Store, StoredObject, StoreUnavailableError } from './types';

const SECRET_KIND = '__Secret';
/** Records that are not secret (types.ts, Store.records), kept as they are. */
const RECORD_KIND = '__Record';

type LogRecord = { op: 'put'; o: StoredObject } | { op: 'del'; k: string };
/** How a put's line starts, before the object's JSON (JSON.stringify of a LogRecord writes the same). */
const PUT_PREFIX = '{"op":"put","o":';
/** A put's line after the object's JSON: its closing brace and the newline. */
const PUT_SUFFIX_BYTES = 2;

export interface EmbeddedStoreOptions {
  dataDir: string;
  /** Compact the log into a snapshot once it grows past this many bytes, and past the last snapshot's size. */
  compactBytes?: number;
  /**
   * false: compact past `compactBytes` alone, whatever the snapshot's size (a test that
   * needs the directory to hold nothing but the current state, compacting after every write).
   */
  compactPastSnapshotSize?: boolean;
  /** The key secrets are sealed with; without one, the data directory's key file. */
  encryption?: EncryptionKeys;
  /** Shared with the event bus in the same data directory; one of its own otherwise. */
  health?: DataDirHealth;
  logger?: Logger;
  /** The kinds lists read, indexed for pages (list-index.ts). */
  listed?: readonly ListedKind[];
  /** How many objects are kept parsed at most (kept-records.ts); the others are read from their files and parsed when read. */
  parsedObjects?: number;
}

/** Enough for every object a busy service reads again and again (API keys, users, the resources being worked on). */
const DEFAULT_PARSED_OBJECTS = 10_000;

const keyOf = (kind: string, team: string, id: string) => `${kind}/${team}/${id}`;
/** The team part of a key (kinds and team ids hold no slash). */
const teamOfKey = (key: string) => key.split('/', 2)[1];

/** A record's data as stored (every value a string, as written). */
const stringsOf = (spec: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(spec).map(([field, value]) => [field, String(value)]));

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  const prototype: unknown = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  return prototype === Object.prototype || prototype === null;
};

/**
 * A deep-frozen copy of a version about to be stored that shares with `stored`, the
 * store's own deep-frozen version before it, every value it still holds at the same
 * place. A write builds the next version from the last (`{ ...current.status, ...changes }`),
 * so most of it is the very same values, and they need no copy; what the caller made anew
 * is copied, so no one keeps a mutable reference into the store. A whole structuredClone
 * copied every version entire, strings included (a webhook delivery's body on each
 * attempt), and was the largest cost of a status write.
 */
function storedCopy<T>(value: T, stored: unknown): T {
  if (value === stored || value === null || typeof value !== 'object') return value;
  // Not plain JSON (a Date): copied whole, as before.
  if (!Array.isArray(value) && !isPlainObject(value)) return deepFreeze(structuredClone(value));
  // The same items or members, each the value or its copy: the copy has the type of `value`.
  return Object.freeze(copiedMembers(value, stored)) as T;
}

function copiedMembers(value: unknown[] | Record<string, unknown>, stored: unknown): unknown[] | Record<string, unknown> {
  if (Array.isArray(value)) {
    const before: unknown[] = Array.isArray(stored) ? stored : [];
    return value.map((item, i) => storedCopy(item, before[i]));
  }
  const before = isPlainObject(stored) ? stored : {};
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = storedCopy(value[key], before[key]);
  return copy;
}

export class EmbeddedStore implements Store {
  /** Every committed object: where its JSON is, and (while in use) the object. */
  private readonly kept: KeptRecords;
  /** The snapshot, open for reading the objects whose JSON is in it (-1: none). */
  private snapshotFd = -1;
  /** The committed objects by kind and team, and their list indexes: what reads are answered from (object-cache.ts). */
  private readonly cache: ObjectCache<KeptRecord>;
  /**
   * Writes handed to the log but not yet on disk, by key. A second write of the same key
   * waits for the first to settle, so writes of one object are serialised and checked
   * against committed state, and readers never see what is not yet durable.
   */
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly listeners = new WatchListeners();
  readonly watch = this.listeners.watch;
  private readonly log: AppendLog;
  private readonly snapshotFile: string;
  private readonly compactBytes: number;
  /** The size of the snapshot on disk (0 with none). */
  private snapshotBytes = 0;
  private revision = 0;
  private unlock: (() => void) | null = null;
  private box: SecretBox | null = null;
  private readonly health: DataDirHealth;
  private readonly compaction: BackgroundWrite;
  /** After a refused append: probes the directory until it takes writes again. */
  private readonly appendRecovery: BackgroundWrite;

  // Reads are answered by the cache (set in the constructor), as the Kubernetes store's are.
  readonly get: Store['get'];
  readonly peek: Store['peek'];
  readonly list: Store['list'];
  readonly keys: Store['keys'];
  readonly page: Store['page'];
  readonly named: Store['named'];
  readonly count: Store['count'];
  readonly secrets: EmbeddedEntries;
  readonly records: EmbeddedEntries;

  constructor(private readonly options: EmbeddedStoreOptions) {
    this.kept = new KeptRecords(options.parsedObjects ?? DEFAULT_PARSED_OBJECTS, (place) => this.read(place));
    this.cache = new ObjectCache(options.listed, (record) => this.kept.objectOf(record));
    ({ get: this.get, peek: this.peek, list: this.list, keys: this.keys, page: this.page, named: this.named, count: this.count } = this.cache);
    const host = {
      latest: (key: string) => this.latest(key),
      exclusive: <T>(key: string, write: () => Promise<T>) => this.exclusive(key, write),
      commit: async (key: string, object: StoredObject<object, object> | null) => {
        if (object) await this.commit(key, object);
        else await this.write(key, null);
      },
      keyOf,
    };
    this.secrets = new EmbeddedEntries(SECRET_KIND, host, {
      encode: (team, name, data) => this.secretBox().seal(team, name, data),
      decode: (object) => this.unseal(object),
    });
    this.records = new EmbeddedEntries(RECORD_KIND, host, { encode: (_team, _name, data) => ({ ...data }), decode: (object) => stringsOf(object.spec) });
    this.log = new AppendLog(path.join(options.dataDir, 'store.log'));
    this.snapshotFile = path.join(options.dataDir, 'store.snapshot.json');
    this.compactBytes = options.compactBytes ?? 64 * 1024 * 1024;
    this.health = options.health ?? new DataDirHealth(options.dataDir, options.logger);
    this.compaction = new BackgroundWrite('store.snapshot', () => this.compact(), this.health);
    this.appendRecovery = new BackgroundWrite(
      'store.log',
      () => {
        this.health.probe();
      },
      this.health,
    );
  }

  async start(): Promise<void> {
    this.unlock = lockDataDir(this.options.dataDir);
    // The key ids of every secret record at rest, live or superseded ('' for plain text).
    const sealedWith = new Set<string>();
    const note = (o: StoredObject) => o.meta.kind === SECRET_KIND && sealedWith.add(isSealed(o.spec) ? o.spec.sealed.kid : '');
    // Objects whose JSON is held in memory until a compaction writes it to the snapshot (see below).
    let inMemory = false;
    if (fs.existsSync(this.snapshotFile)) {
      const content = fs.readFileSync(this.snapshotFile);
      this.snapshotBytes = content.length;
      this.snapshotFd = fs.openSync(this.snapshotFile, 'r');
      const snapshot = readSnapshot(content);
      this.revision = snapshot.revision;
      for (const { object, place } of snapshot.objects) {
        this.apply(keyOf(object.meta.kind, object.meta.team, object.meta.id), place, object);
        inMemory ||= place.file === 'memory';
        note(object);
      }
    }
    // Replaying puts of whole objects is idempotent, so a crash between writing the
    // snapshot and truncating the log is harmless.
    this.log.open<LogRecord>().forEach((record, index) => {
      if (record.op === 'put') {
        const o = record.o;
        const place = this.placeInLog(index, o);
        this.apply(keyOf(o.meta.kind, o.meta.team, o.meta.id), place, o);
        this.revision = Math.max(this.revision, Number(o.meta.resourceVersion));
        inMemory ||= place.file === 'memory';
        note(o);
      } else {
        this.apply(record.k, null);
      }
    });
    try {
      await this.sealSecretsAtRest(sealedWith);
      // A snapshot written on one line (before its objects had a line each), or a put not
      // written as this store writes them: compacted now, so that every object is read from its file.
      if (inMemory) await this.compact();
    } catch (err) {
      // A start refused (a wrong or missing key) leaves the data directory as it found it.
      await this.log.close();
      this.closeSnapshot();
      this.releaseDataDir();
      throw err;
    }
  }

  async stop(): Promise<void> {
    // A compaction that is due runs first: it is what purges replaced secrets' ciphertext.
    await this.compaction.flush();
    await this.compaction.stop();
    await this.appendRecovery.stop();
    await this.log.close();
    this.closeSnapshot();
    this.listeners.clear();
    this.releaseDataDir();
  }

  private closeSnapshot(): void {
    if (this.snapshotFd >= 0) fs.closeSync(this.snapshotFd);
    this.snapshotFd = -1;
  }

  /**
   * An object's JSON, from where it is. A read the disk fails (EIO) fails the request that
   * asked (503, as a write the directory refuses), not the process; the object is read
   * again on the next request.
   */
  private read(place: RecordPlace): string {
    if (place.file === 'memory') return place.text;
    try {
      return place.file === 'log' ? this.log.readText(place.at, place.length) : readText(this.snapshotFd, place.at, place.length);
    } catch (err) {
      this.options.logger?.error({ err, file: place.file, at: place.at }, 'reading an object from the data directory failed');
      throw new StoreUnavailableError(err);
    }
  }

  /**
   * Where the object of the log's `index`-th record, a put of `object`, is in the log: after
   * the put's prefix, if the line is as this store writes it (its length says so), else
   * (a line written otherwise) in memory until the next compaction.
   */
  private placeInLog(index: number, object: StoredObject): RecordPlace {
    const json = JSON.stringify(object);
    const line = this.log.lineOf(index);
    const length = line.bytes - PUT_PREFIX.length - PUT_SUFFIX_BYTES;
    return Buffer.byteLength(json) === length ? { file: 'log', at: line.at + PUT_PREFIX.length, length } : { file: 'memory', text: json };
  }

  /** Lets another process open the data directory (a second call does nothing). */
  private releaseDataDir(): void {
    this.unlock?.();
    this.unlock = null;
  }

  /** `stale` while the data directory refuses a write (see DataDirHealth); reads still answer. */
  persistence(): PersistenceState {
    return this.health.state;
  }

  async create<S, St>(input: NewObject<S, St>): Promise<StoredObject<S, St>> {
    const key = keyOf(input.meta.kind, input.meta.team, input.meta.id);
    return this.exclusive(key, () => {
      if (this.latest(key)) throw new AlreadyExistsError(input.meta.kind, input.meta.id);
      const now = nowIso();
      const object: StoredObject<S, St> = {
        meta: {
          kind: input.meta.kind,
          id: input.meta.id,
          team: input.meta.team,
          labels: { ...(input.meta.labels ?? {}) },
          generation: 1,
          createdAt: now,
          updatedAt: now,
          resourceVersion: '',
        },
        spec: input.spec,
        status: input.status,
      };
      return this.commit(key, object);
    });
  }

  async update<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    return this.exclusive(this.keyFor(object), () => {
      const current = this.current<S, St>(object);
      const specChanged = !sameJson(current.spec, object.spec);
      return this.commit(this.keyFor(object), {
        meta: {
          ...current.meta,
          labels: { ...object.meta.labels },
          ...(object.meta.reconcileRequestedAt !== undefined ? { reconcileRequestedAt: object.meta.reconcileRequestedAt } : {}),
          generation: current.meta.generation + (specChanged ? 1 : 0),
          updatedAt: nowIso(),
        },
        spec: object.spec,
        status: current.status,
      });
    });
  }

  async updateStatus<S, St>(object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    return this.exclusive(this.keyFor(object), () => {
      const current = this.current<S, St>(object);
      return this.commit(this.keyFor(object), {
        meta: { ...current.meta, updatedAt: onlyOutboxDiffers(current.status, object.status) ? current.meta.updatedAt : nowIso() },
        spec: current.spec,
        status: object.status,
      });
    });
  }

  async requestDeletion<S, St>(kind: string, team: string, id: string): Promise<StoredObject<S, St>> {
    const key = keyOf(kind, team, id);
    return this.exclusive(key, async () => {
      const current = this.latest(key);
      if (!current) throw new NotFoundError(kind, id);
      if (current.meta.deletionTimestamp) return readAs<S, St>(current);
      const now = nowIso();
      return readAs<S, St>(await this.commit(key, { ...current, meta: { ...current.meta, deletionTimestamp: now, updatedAt: now } }));
    });
  }

  async remove(kind: string, team: string, id: string, resourceVersion?: string): Promise<void> {
    const key = keyOf(kind, team, id);
    return this.exclusive(key, () => {
      const current = this.latest(key);
      if (!current) throw new NotFoundError(kind, id);
      if (resourceVersion !== undefined && current.meta.resourceVersion !== resourceVersion) throw new ConflictError(kind, id);
      return this.write(key, null);
    });
  }

  /** A secret's data; every secret is sealed once the store started (sealSecretsAtRest). */
  private unseal(object: StoredObject): Record<string, string> {
    if (!isSealed(object.spec)) throw new Error(`secret ${object.meta.team}/${object.meta.id} is not sealed`);
    return this.secretBox().open(object.meta.team, object.meta.id, object.spec);
  }

  private secretBox(): SecretBox {
    if (!this.box) throw new Error('the embedded store is not started');
    return this.box;
  }

  /**
   * Takes the key (encryption-key.ts) and checks that it opens every secret. Secrets that
   * are at rest in plain text (written before secrets were encrypted) or under a key being
   * rotated away are sealed again with the current key, and a compaction then purges the
   * old records from the log and the snapshot: after one start, nothing but the current
   * key's ciphertext is left. A crash before the compaction ends leaves the old records
   * for the next start, which does the same again.
   */
  private async sealSecretsAtRest(sealedWith: Set<string>): Promise<void> {
    const keyring = loadKeyring(
      this.options.dataDir,
      this.options.encryption ?? {},
      [...sealedWith].filter((kid) => kid !== ''),
    );
    const box = new SecretBox(keyring.current, keyring.previous);
    const stale: Array<{ key: string; team: string; name: string; data: Record<string, string> }> = [];
    for (const record of [...this.cache.values(SECRET_KIND)]) {
      const secret = this.kept.objectOf(record);
      const { team, id: name } = secret.meta;
      const key = keyOf(SECRET_KIND, team, name);
      let data: Record<string, string>;
      try {
        data = isSealed(secret.spec) ? box.open(team, name, secret.spec) : { ...(secret.spec as Record<string, string>) };
      } catch (err) {
        if (!(err instanceof SecretKeyError)) throw err;
        throw new Error(
          `${this.options.dataDir}: ${err.message}. Start with the key that encrypted the store's secrets ` +
            "(CLOUDPLANE_ENCRYPTION_KEY, or the data directory's key file); to change keys, give the old one in CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS for one start.",
        );
      }
      if (!isSealed(secret.spec) || secret.spec.sealed.kid !== box.currentKeyId) stale.push({ key, team, name, data });
    }
    this.box = box;
    await Promise.all(stale.map(({ key, team, name, data }) => this.exclusive(key, () => this.secrets.write(key, team, name, data))));
    if ([...sealedWith].some((kid) => kid !== box.currentKeyId)) await this.compact();
  }

  private keyFor(object: StoredObject<unknown, unknown>): string {
    return keyOf(object.meta.kind, object.meta.team, object.meta.id);
  }

  private latest(key: string): StoredObject | undefined {
    const record = this.recordOf(key);
    return record && this.kept.objectOf(record);
  }

  private recordOf(key: string): KeptRecord | undefined {
    const kind = key.slice(0, key.indexOf('/'));
    return this.cache.entry(kind, key.slice(kind.length + 1));
  }

  /**
   * Runs `write` once no write of `key` is in flight. `write` must check committed state
   * and hand its record to the log without awaiting anything first: the check and the
   * append then happen in one synchronous step, which registers the write in `inflight`
   * before any other writer of the key can look. (Waiting in a helper and checking after
   * awaiting it would let every writer that waited pass the same check.)
   */
  private async exclusive<T>(key: string, write: () => Promise<T>): Promise<T> {
    for (let pending = this.inflight.get(key); pending; pending = this.inflight.get(key)) await pending;
    return write();
  }

  /** The latest version of `object`, checking that the caller wrote on top of it. */
  private current<S, St>(object: StoredObject<S, St>): StoredObject<S, St> {
    const current = this.latest(this.keyFor(object));
    if (!current) throw new NotFoundError(object.meta.kind, object.meta.id);
    if (current.meta.resourceVersion !== object.meta.resourceVersion) throw new ConflictError(object.meta.kind, object.meta.id);
    return readAs<S, St>(current);
  }

  private async commit<S, St>(key: string, object: StoredObject<S, St>): Promise<StoredObject<S, St>> {
    // Copied from the version before only if it is parsed: parsing it just to share its values would cost more than it saves.
    const stored = storedCopy({ ...object, meta: { ...object.meta, resourceVersion: String(++this.revision) } }, this.kept.parsedOf(this.recordOf(key)));
    // Kept as JSON of any kind, as every object is (readAs takes it back).
    const kept = stored as StoredObject;
    await this.write(key, { object: kept, json: JSON.stringify(kept) });
    return stored;
  }

  /** Writes the key's next version (its object and that object's JSON), or deletes the key (null). */
  private async write(key: string, value: { object: StoredObject; json: string } | null): Promise<void> {
    // While the directory refuses a write, refuse them all: a write that happened to fit
    // would answer 201 beside 503s and flip persistence back and forth; recovery is the
    // background retries' job, and the first of them to succeed ends this.
    if (this.health.state !== 'synced') throw new StoreUnavailableError(this.health.cause);
    const line = value ? `${PUT_PREFIX}${value.json}}` : JSON.stringify({ op: 'del', k: key } satisfies LogRecord);
    const appended = this.log.appendJsonAt(line, teamOfKey(key));
    const settled = appended.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.set(key, settled);
    let at: number;
    try {
      at = await appended;
    } catch (err) {
      this.health.failed('store.log', err);
      this.appendRecovery.request(DEFAULT_RETRY.baseMs);
      throw new StoreUnavailableError(err);
    } finally {
      if (this.inflight.get(key) === settled) this.inflight.delete(key);
    }
    const previousRecord = this.recordOf(key);
    const previous = previousRecord && this.kept.objectOf(previousRecord);
    this.apply(key, value && { file: 'log', at: at + PUT_PREFIX.length, length: Buffer.byteLength(value.json) }, value?.object);
    const object = value?.object;
    this.listeners.notifyLater(
      object ? { type: previous ? 'modified' : 'added', object, previous } : previous ? { type: 'deleted', object: previous, previous } : null,
    );
    if (this.compactionDue()) this.compaction.request();
  }

  /**
   * Past the configured size, and past the last snapshot's: a compaction writes every
   * object, so with a fixed threshold its cost per write grew with the store (a 150 MB
   * snapshot, written with the loop blocked, every 64 MB of log at 100,000 objects).
   * Letting the log grow to the snapshot's size first, as Redis rewrites its AOF once it
   * has doubled, keeps that cost per write constant; the directory holds at most about
   * twice the live data, plus the threshold.
   */
  private compactionDue(): boolean {
    const floor = this.options.compactPastSnapshotSize === false ? 0 : this.snapshotBytes;
    return this.log.size > Math.max(this.compactBytes, floor);
  }

  /**
   * Makes the JSON at `place` the key's committed version (null: the key is gone). `object`
   * is its parsed form when the caller has it (a write, the replay of a record); it is kept
   * parsed then.
   */
  private apply(key: string, place: RecordPlace | null, object?: StoredObject): void {
    const kind = key.slice(0, key.indexOf('/'));
    const teamAndId = key.slice(kind.length + 1);
    const previous = this.cache.entry(kind, teamAndId);
    if (kind === SECRET_KIND || kind === RECORD_KIND) {
      const entries = kind === SECRET_KIND ? this.secrets : this.records;
      entries.applied(key, place === null ? null : (object ?? (JSON.parse(this.read(place)) as StoredObject)), previous && this.kept.objectOf(previous));
    }
    if (place !== null) this.cache.set(kind, teamAndId, this.kept.keep(place, object));
    else this.cache.delete(kind, teamAndId);
    if (previous) this.kept.release(previous);
  }

  /**
   * Writes the committed state as a snapshot, then empties the log, between two commits
   * (AppendLog.betweenCommits): every record in the file has been applied then, and the
   * writes that wait for the next commit go into the emptied log. Waiting for a moment with
   * no write at all instead, a steady load put compactions off and the log grew past twice
   * its threshold.
   */
  private async compact(): Promise<void> {
    await this.log.betweenCommits(() => {
      const records = [...this.cache.all()];
      const { text, places } = snapshotText(
        this.revision,
        records.map((record) => this.kept.json(record)),
      );
      writeFileDurable(this.snapshotFile, text);
      this.snapshotBytes = Buffer.byteLength(text);
      // Every object is read from the new snapshot from here on; the old one's descriptor
      // read the file it replaced, and the log is emptied next.
      const snapshotFd = fs.openSync(this.snapshotFile, 'r');
      this.closeSnapshot();
      this.snapshotFd = snapshotFd;
      records.forEach((record, i) => (record.place = places[i]));
      this.log.truncateSync();
    });
  }
}

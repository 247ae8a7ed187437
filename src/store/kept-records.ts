/**
 * How the embedded store keeps each stored object in memory: by where its JSON is in the
 * data directory (the line its write appended to `store.log`, or its line of the snapshot
 * once a compaction moved it there), and parsed only while in use. A bounded set of parsed
 * objects is kept, those written or read lately; any other is read back from its file
 * (from the page cache, as a rule) and parsed when read, a few microseconds for a load
 * balancer, and deep-frozen like every object the store hands out. Parsed, a load balancer
 * was about 2.7 KB of heap for 1 KB of JSON, and every collection had to mark them all; its
 * JSON kept in memory instead would still be the whole store in the process's memory.
 *
 * Which parsed objects stay: the newest, with a second chance (CLOCK): a read marks its
 * record, and the oldest is dropped unless marked, in which case it loses its mark and goes
 * to the back. A read costs one flag, not a move in a list.
 */
import type { StoredObject } from './types';

/** Where a record's JSON is: bytes of the log or of the snapshot, or (until the store's first compaction) a text in memory. */
export type RecordPlace = { file: 'log' | 'snapshot'; at: number; length: number } | { file: 'memory'; text: string };

/** One stored version of an object: where its JSON is, and its parsed form while kept. */
export class KeptRecord {
  /** Read since it was last passed over for dropping. */
  referenced = false;
  parsed: StoredObject | undefined = undefined;
  // The place as fields of the record: a place object of its own was 48 bytes more a record.
  private file: RecordPlace['file'] = 'memory';
  private at = 0;
  private length = 0;
  private text = '';

  constructor(place: RecordPlace) {
    this.place = place;
  }

  get place(): RecordPlace {
    return this.file === 'memory' ? { file: 'memory', text: this.text } : { file: this.file, at: this.at, length: this.length };
  }

  set place(place: RecordPlace) {
    this.file = place.file;
    if (place.file === 'memory') {
      this.text = place.text;
      return;
    }
    this.text = '';
    this.at = place.at;
    this.length = place.length;
  }
}

/** Reads a record's JSON from where it is. */
export type ReadPlace = (place: RecordPlace) => string;

export function deepFreeze<T>(value: T): T {
  // Arrays too: a stored object's lists are as frozen as its members.
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export class KeptRecords {
  /** Records with a parsed object, oldest first. */
  private readonly withParsed = new Set<KeptRecord>();

  constructor(
    /** How many parsed objects are kept at most. */
    private readonly parsedLimit: number,
    private readonly read: ReadPlace,
  ) {}

  /** A record of the JSON at `place`; `parsed`, its object when the caller has it, is kept as the newest. */
  keep(place: RecordPlace, parsed: StoredObject | undefined): KeptRecord {
    const record = new KeptRecord(place);
    if (parsed) this.holdParsed(record, deepFreeze(parsed));
    return record;
  }

  /** The object of a record: its parsed form, read and parsed again when not kept. */
  objectOf(record: KeptRecord): StoredObject {
    const parsed = record.parsed;
    if (parsed !== undefined) {
      record.referenced = true;
      return parsed;
    }
    const object = deepFreeze(JSON.parse(this.read(record.place)) as StoredObject);
    this.holdParsed(record, object);
    return object;
  }

  /** The object of a record if it is parsed, without reading it (a write copies from it when it can). */
  parsedOf(record: KeptRecord | undefined): StoredObject | undefined {
    return record?.parsed;
  }

  /** The record's JSON text. */
  json(record: KeptRecord): string {
    return this.read(record.place);
  }

  /** Forgets a version replaced or deleted (its bytes go with the next compaction). */
  release(record: KeptRecord): void {
    if (record.parsed !== undefined) this.withParsed.delete(record);
    record.parsed = undefined;
  }

  private holdParsed(record: KeptRecord, object: StoredObject): void {
    record.parsed = object;
    record.referenced = false;
    this.withParsed.add(record);
    while (this.withParsed.size > this.parsedLimit) this.dropOldest();
  }

  private dropOldest(): void {
    for (const oldest of this.withParsed) {
      this.withParsed.delete(oldest);
      if (oldest.referenced) {
        oldest.referenced = false;
        this.withParsed.add(oldest);
        continue;
      }
      oldest.parsed = undefined;
      return;
    }
  }
}

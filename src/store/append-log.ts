/**
 * A durable, append-only file of JSON records with group commit: records waiting when a
 * commit starts share one write and one fdatasync, and append() resolves only after the
 * data is on disk. A crash can leave a torn last line; open() cuts it off. rewrite() drops
 * a prefix of the records, crash-safely, while appends go on.
 *
 * A commit takes at most COMMIT_BYTES, and the teams whose records wait take turns in it
 * (round robin, first in first out within a team). In one first-in-first-out line, one
 * team's 4,800 webhook delivery records went into one 7 MB commit, and another team's
 * single create waited for all of it to reach the disk, then for every one of its
 * 4,800 appenders to run. Records of different teams are of different objects, and the
 * store serialises the writes of one object, so the order between them is free.
 */
import fs from 'node:fs';
import { readText } from '../lib/file-text';
import path from 'node:path';
import { codeOf } from '../lib/unknown-values';
import { isAlive } from '../lib/processes';
import { TeamTurns } from '../lib/team-turns';
import { takeTurn } from '../lib/event-loop-turns';

const NEWLINE = 0x0a;
/** The new log of a rewrite() is written under this suffix, then renamed over the log. */
const REWRITE_SUFFIX = '.rewrite';
const COPY_CHUNK_BYTES = 1024 * 1024;
/** What one commit writes at most (one record more if it alone is larger): well under a millisecond of disk, and few appenders to resume. */
const COMMIT_BYTES = 64 * 1024;

interface PendingAppend {
  line: string;
  bytes: number;
  /** The team whose turn it takes ('' for records of no team). */
  team: string;
  /** Called with where the line starts in the file. */
  resolve: (at: number) => void;
  reject: (err: unknown) => void;
  /** Where its line starts, once committed. */
  at: number;
}

export class AppendLog {
  private fd = -1;
  private readonly queue = new TeamTurns<PendingAppend>((p) => p.team);
  private flushing: Promise<void> | null = null;
  private bytes = 0;
  /** A failed commit left bytes past `bytes` that could not be cut off then; cut them before the next. */
  private tailToCut = false;
  /** Where each record ends in the file, so that rewrite() can start its copy at any one. */
  private ends: number[] = [];
  /** A rewrite holds commits back while it copies the last appends and switches files. */
  private held = false;
  private rewriting = false;
  /** A rewrite renamed the new log into place but could not sync the directory yet. */
  private directoryToSync = false;

  constructor(readonly file: string) {}

  /**
   * Opens the log and returns every complete record in it. Works on the raw bytes, so the
   * cost is linear in the size of the log (a newline byte never occurs inside a UTF-8
   * multi-byte character).
   */
  open<T>(): T[] {
    // A rewrite that a crash cut short left its new log unfinished; the old one is whole.
    fs.rmSync(`${this.file}${REWRITE_SUFFIX}`, { force: true });
    const records: T[] = [];
    this.ends = [];
    const content = fs.existsSync(this.file) ? fs.readFileSync(this.file) : Buffer.alloc(0);
    let goodBytes = 0;
    while (goodBytes < content.length) {
      const end = content.indexOf(NEWLINE, goodBytes);
      if (end === -1) break; // torn tail: the write of this line never completed
      try {
        records.push(JSON.parse(content.toString('utf8', goodBytes, end)) as T);
      } catch {
        if (content.indexOf(NEWLINE, end + 1) !== -1) {
          throw new Error(`${this.file}: corrupt record in the middle of the log at byte ${goodBytes}`);
        }
        break; // a torn last record
      }
      goodBytes = end + 1;
      this.ends.push(goodBytes);
    }
    this.fd = fs.openSync(this.file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    fs.ftruncateSync(this.fd, goodBytes);
    fs.fsyncSync(this.fd);
    this.bytes = goodBytes;
    return records;
  }

  get size(): number {
    return this.bytes;
  }

  /** Records in the log. */
  get records(): number {
    return this.ends.length;
  }

  /** Where the `index`-th record's line starts in the file, and its bytes with the newline. */
  lineOf(index: number): { at: number; bytes: number } {
    const at = index === 0 ? 0 : this.ends[index - 1];
    return { at, bytes: this.ends[index] - at };
  }

  /** `length` bytes of the log from `at`, as UTF-8 text (a record's, or part of one). */
  readText(at: number, length: number): string {
    return readText(this.fd, at, length);
  }

  /**
   * The JSON text of the committed records [from, to), read back from the file in one read:
   * for a reader that keeps their places rather than their contents in memory. Synchronous,
   * so that a rewrite cannot switch files in the middle of it.
   */
  readRecords(from: number, to: number): string[] {
    if (from < 0 || to > this.ends.length || from > to) throw new RangeError(`${this.file}: no records [${from}, ${to}) among ${this.ends.length}`);
    if (from === to) return [];
    const start = from === 0 ? 0 : this.ends[from - 1];
    const buffer = Buffer.allocUnsafe(this.ends[to - 1] - start);
    for (let read = 0; read < buffer.length;) {
      const n = fs.readSync(this.fd, buffer, read, buffer.length - read, start + read);
      if (n === 0) throw new Error(`${this.file}: the log ended at byte ${start + read}, before ${start + buffer.length}`);
      read += n;
    }
    const texts: string[] = [];
    let at = 0;
    for (let i = from; i < to; i++) {
      const end = this.ends[i] - start;
      texts.push(buffer.toString('utf8', at, end - 1)); // without the newline
      at = end;
    }
    return texts;
  }

  /** The end of a run of records from `from` that spans at most `maxBytes` (at least one record, if there is one). */
  recordsWithin(from: number, maxBytes: number): number {
    const start = from === 0 ? 0 : this.ends[from - 1];
    let to = Math.min(from + 1, this.ends.length);
    while (to < this.ends.length && this.ends[to] - start <= maxBytes) to++;
    return to;
  }

  /** Appends a record in `team`'s turn (see the top of this file). */
  append(record: unknown, team = ''): Promise<void> {
    return this.appendJson(JSON.stringify(record), team);
  }

  /** Appends a record already serialised (by a caller that keeps the text too). */
  async appendJson(text: string, team = ''): Promise<void> {
    await this.appendJsonAt(text, team);
  }

  /**
   * `appendJson`, resolving with where the record's line starts in the file, to be read
   * back there (`readText`) until the log is truncated: for a caller that keeps the
   * place of a record rather than its text.
   */
  appendJsonAt(text: string, team = ''): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const line = `${text}\n`;
      this.queue.push({ line, bytes: Buffer.byteLength(line), team, resolve, reject, at: -1 });
      // Start writing once the current turn is over, so that everything appended in it
      // goes into the first batch rather than the first record alone.
      if (!this.flushing && !this.held) this.startFlushing();
    });
  }

  /** Waits until everything appended so far is on disk. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** True when nothing is queued or being written. */
  get idle(): boolean {
    return this.flushing === null && this.queue.length === 0;
  }

  /**
   * Runs `step` between commits: once the commit in flight is on disk and each of its
   * appenders has resumed, while later appends wait; they are committed after it, into
   * whatever the log then is. For a step that must see every record of the file applied
   * and none half-way (the store's compaction), without waiting for a moment when nobody
   * appends, which a steady load may never give.
   */
  async betweenCommits<T>(step: () => T): Promise<T> {
    if (this.held || this.rewriting) throw new Error(`${this.file}: commits are held already`);
    await this.hold();
    try {
      // The appenders of the last commit resume in turns (flushLoop): let the last of them finish.
      await new Promise((resolve) => setImmediate(resolve));
      return step();
    } finally {
      this.release();
    }
  }

  /**
   * Empties the log, between commits (no commit being written; appends waiting for one are
   * not in the file and are written after); the caller must have made the records in the
   * file durable elsewhere first.
   */
  truncateSync(): void {
    if (this.flushing) throw new Error('cannot truncate a log with a commit in flight');
    fs.ftruncateSync(this.fd, 0);
    fs.fsyncSync(this.fd);
    this.bytes = 0;
    this.ends = [];
  }

  /**
   * Replaces the log by `header` followed by its records from the `keepFrom`-th on (a
   * header written by an earlier rewrite counts as a record), so that a crash at any
   * moment leaves either the old log or the new one, whole: the new one is written beside
   * it and synced, renamed over it, and the directory synced. Appends go on into the old
   * log while it is copied; for the last part of the copy and the switch they are held,
   * then go into the new log. `switched` runs at the switch, before any append lands in
   * the new log. A failure before the switch leaves the old log as it was.
   */
  async rewrite(keepFrom: number, header: unknown, switched: () => void): Promise<void> {
    if (this.rewriting) throw new Error(`${this.file}: a rewrite is in progress`);
    if (keepFrom < 0 || keepFrom > this.ends.length) throw new Error(`${this.file}: no record ${keepFrom} to keep from`);
    this.rewriting = true;
    const tmp = `${this.file}${REWRITE_SUFFIX}`;
    let out = -1;
    let dir = -1;
    try {
      const from = keepFrom === 0 ? 0 : this.ends[keepFrom - 1];
      const head = Buffer.from(`${JSON.stringify(header)}\n`);
      // Opened first: the switch must not need a descriptor it may not get.
      dir = fs.openSync(path.dirname(this.file), 'r');
      out = fs.openSync(tmp, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o600);
      await writeAll(out, head, 0);
      // Copy what is committed while commits go on; once little is left, hold them and
      // copy the rest (the commit in flight included).
      let copied = from;
      while (!this.held || copied < this.bytes) {
        if (!this.held && this.bytes - copied < COPY_CHUNK_BYTES) await this.hold();
        const until = this.bytes;
        await copyRange(this.fd, out, copied, until, head.length + copied - from);
        copied = until;
      }
      await fdatasync(out);
      fs.renameSync(tmp, this.file);
      // From here on the new file is the log, whatever fails next.
      fs.closeSync(this.fd);
      this.fd = out;
      out = -1;
      this.ends = [head.length, ...this.ends.slice(keepFrom).map((end) => end - from + head.length)];
      this.bytes = head.length + this.bytes - from;
      this.tailToCut = false;
      this.directoryToSync = true;
      switched();
      fs.fsyncSync(dir);
      this.directoryToSync = false;
    } catch (err) {
      if (out >= 0) {
        fs.closeSync(out);
        try {
          fs.rmSync(tmp, { force: true });
        } catch {
          // open() removes it.
        }
      }
      throw err;
    } finally {
      if (dir >= 0) fs.closeSync(dir);
      this.rewriting = false;
      if (this.held) this.release();
    }
  }

  async close(): Promise<void> {
    await this.drain();
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }

  private startFlushing(): void {
    this.flushing = Promise.resolve().then(() => this.flushLoop());
  }

  /** Holds commits back: waits for the one in flight; later appends queue up until release(). */
  private async hold(): Promise<void> {
    this.held = true;
    while (this.flushing) await this.flushing;
  }

  private release(): void {
    this.held = false;
    if (this.queue.length > 0 && !this.flushing) this.startFlushing();
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0 && !this.held) {
      const batch = this.nextCommit();
      try {
        if (this.tailToCut) {
          fs.ftruncateSync(this.fd, this.bytes);
          this.tailToCut = false;
        }
        // A record is durable only once the name of the file it is in is.
        if (this.directoryToSync) {
          syncDirectory(path.dirname(this.file));
          this.directoryToSync = false;
        }
        const buffer = Buffer.from(batch.map((p) => p.line).join(''));
        await writeAll(this.fd, buffer, this.bytes);
        await fdatasync(this.fd);
        let end = this.bytes;
        for (const p of batch) {
          p.at = end;
          this.ends.push((end += p.bytes));
        }
        this.bytes = end;
      } catch (err) {
        // Cut off whatever part of the batch reached the file, so that a later, shorter
        // batch written at the same offset cannot leave a remnant of this one behind it.
        try {
          fs.ftruncateSync(this.fd, this.bytes);
        } catch {
          // Until the remnant is cut, no commit may be written after it: a later, shorter
          // batch would leave some of this refused one behind it, to come back on open().
          this.tailToCut = true;
        }
        for (const p of batch) p.reject(err);
        continue;
      }
      // Each appender's continuation (the store's cache and watchers, the bus's consumers)
      // runs when its record resolves: in turns of the event loop, so that a commit's
      // continuations together cannot hold it longer than a turn's budget.
      for (const p of batch) {
        p.resolve(p.at);
        await takeTurn();
      }
    }
    this.flushing = null;
  }

  /** The records of the next commit: the waiting teams' in turns, up to COMMIT_BYTES. */
  private nextCommit(): PendingAppend[] {
    const batch: PendingAppend[] = [];
    let bytes = 0;
    let next = this.queue.shift();
    while (next) {
      batch.push(next);
      bytes += next.bytes;
      next = bytes < COMMIT_BYTES ? this.queue.shift() : undefined;
    }
    return batch;
  }
}

function fdatasync(fd: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    fs.fdatasync(fd, (err) => {
      if (err) reject(err);
      else resolve();
    });
  });
}

/** Copies bytes [start, end) of one file to another at `at`. */
async function copyRange(from: number, to: number, start: number, end: number, at: number): Promise<void> {
  if (end <= start) return;
  const chunk = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, end - start));
  for (let position = start; position < end;) {
    const n = await new Promise<number>((resolve, reject) => {
      fs.read(from, chunk, 0, Math.min(chunk.length, end - position), position, (err, read) => {
        if (err) reject(err);
        else resolve(read);
      });
    });
    if (n === 0) throw new Error(`the log ended at byte ${position}, before ${end}`);
    await writeAll(to, chunk.subarray(0, n), at + position - start);
    position += n;
  }
}

async function writeAll(fd: number, buffer: Buffer, position: number): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const written = await new Promise<number>((res, rej) => {
      fs.write(fd, buffer, offset, buffer.length - offset, position + offset, (err, n) => {
        if (err) rej(err);
        else res(n);
      });
    });
    offset += written;
  }
}

/**
 * Replaces `file` atomically and durably: a crash leaves either the old or the new content.
 * A failure leaves the old content, and takes back the space the new one had taken.
 */
export function writeFileDurable(file: string, content: string): void {
  const tmp = `${file}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeFileSync(fd, content);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // The directory refuses this too; the next attempt overwrites the file.
    }
    throw err;
  }
  syncDirectory(path.dirname(file));
}

/** Makes the directory's entries (a rename, a new file) durable. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * One process per data directory. A lock left by a process that died (kill -9) is taken
 * over; a lock held by a live process stops start-up.
 */
export function lockDataDir(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = path.join(dir, 'LOCK');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fs.openSync(lock, 'wx', 0o600);
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => {
        fs.rmSync(lock, { force: true });
      };
    } catch (err) {
      if (codeOf(err) !== 'EEXIST') throw err;
      const pid = Number(fs.readFileSync(lock, 'utf8'));
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(`data directory ${dir} is in use by process ${pid}`);
      }
      fs.rmSync(lock, { force: true });
    }
  }
  throw new Error(`could not lock data directory ${dir}`);
}

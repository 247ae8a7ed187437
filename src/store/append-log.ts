/**
 * A durable, append-only file of JSON records with group commit: every record handed to
 * append() in the same turn shares one write and one fdatasync, and append() resolves only
 * after the data is on disk. A crash can leave a torn last line; open() cuts it off.
 */
import fs from 'node:fs';
import path from 'node:path';

const NEWLINE = 0x0a;

interface PendingAppend {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class AppendLog {
  private fd = -1;
  private queue: PendingAppend[] = [];
  private flushing: Promise<void> | null = null;
  private bytes = 0;
  /** A failed commit left bytes past `bytes` that could not be cut off then; cut them before the next. */
  private tailToCut = false;

  constructor(readonly file: string) {}

  /**
   * Opens the log and returns every complete record in it. Works on the raw bytes, so the
   * cost is linear in the size of the log (a newline byte never occurs inside a UTF-8
   * multi-byte character).
   */
  open<T>(): T[] {
    const records: T[] = [];
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

  append(record: unknown): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ line: `${JSON.stringify(record)}\n`, resolve, reject });
      // Start writing once the current turn is over, so that everything appended in it
      // goes into the first batch rather than the first record alone.
      if (!this.flushing) this.flushing = Promise.resolve().then(() => this.flushLoop());
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

  /** Empties an idle log; the caller must have made its contents durable elsewhere first. */
  truncateSync(): void {
    if (!this.idle) throw new Error('cannot truncate a log with writes in flight');
    fs.ftruncateSync(this.fd, 0);
    fs.fsyncSync(this.fd);
    this.bytes = 0;
  }

  async close(): Promise<void> {
    await this.drain();
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        if (this.tailToCut) {
          fs.ftruncateSync(this.fd, this.bytes);
          this.tailToCut = false;
        }
        const buffer = Buffer.from(batch.map((p) => p.line).join(''));
        await writeAll(this.fd, buffer, this.bytes);
        await new Promise<void>((res, rej) => fs.fdatasync(this.fd, (err) => (err ? rej(err) : res())));
        this.bytes += buffer.length;
        for (const p of batch) p.resolve();
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
        for (const p of batch) p.reject(err as Error);
      }
    }
    this.flushing = null;
  }
}

async function writeAll(fd: number, buffer: Buffer, position: number): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const written = await new Promise<number>((res, rej) =>
      fs.write(fd, buffer, offset, buffer.length - offset, position + offset, (err, n) => (err ? rej(err) : res(n))),
    );
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
      return () => fs.rmSync(lock, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(fs.readFileSync(lock, 'utf8'));
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(`data directory ${dir} is in use by process ${pid}`);
      }
      fs.rmSync(lock, { force: true });
    }
  }
  throw new Error(`could not lock data directory ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

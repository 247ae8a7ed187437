/**
 * A scratch file that full slabs of a text arena (text-arena.ts) are written to, so that
 * their memory goes back to the system: slab `n` at `n × slab size`, slab numbers taken
 * again as they are freed, so the file is as large as the most slabs held at once. A read
 * is a `pread`, from the page cache as a rule, which the kernel gives up under pressure
 * where a process's own memory would count against its limit.
 *
 * Scratch: what is in it is rebuilt on every start (the audit log follows the event
 * stream). The file is removed as soon as it is opened, so that only the descriptor holds
 * it: its space goes back when it is closed or the process ends, a crash included, and two
 * processes with one data directory never share one.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { persistenceUnreadable } from './errors';
import { readText, readUInt32 } from './file-text';

/** A text in a slab is its UTF-8 bytes behind their length, a 32-bit little-endian number of this many bytes. */
export const LENGTH_BYTES = 4;

export class SlabFile {
  private constructor(
    private fd: number,
    private readonly slabBytes: number,
  ) {}

  /** Opens a new scratch file in `directory` for slabs of `slabBytes`. */
  static open(directory: string, slabBytes: number): SlabFile {
    const file = path.join(directory, `.slabs-${process.pid}-${randomBytes(6).toString('hex')}`);
    const fd = fs.openSync(file, 'wx+', 0o600);
    fs.rmSync(file);
    return new SlabFile(fd, slabBytes);
  }

  /** Writes slab `number`'s first `used` bytes; throws as the disk does (a full disk: the caller keeps the slab). */
  write(number: number, buffer: Buffer, used: number): void {
    let written = 0;
    while (written < used) written += fs.writeSync(this.fd, buffer, written, used - written, number * this.slabBytes + written);
  }

  /** The text at `at` of slab `number` (behind its length, LENGTH_BYTES). */
  text(number: number, at: number): string {
    const position = number * this.slabBytes + at;
    try {
      return readText(this.fd, position + LENGTH_BYTES, readUInt32(this.fd, position));
    } catch (err) {
      throw persistenceUnreadable(err instanceof Error ? err.message : String(err));
    }
  }

  /** Closes the file, which gives its space back. */
  close(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }
}

/**
 * Text read from a file at a known place, synchronously: the stores' and the arenas' reads
 * of what they keep on disk answer without a turn of the loop.
 */
import fs from 'node:fs';

/**
 * Where readText reads into, grown as needed and used again: reads are synchronous, so one
 * is enough, where a Buffer per read would be a slice of Node's 8 KiB pool, and a new pool
 * every few reads, for the collector to free.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

/** `length` bytes of a file from `at`, as UTF-8 text, read synchronously (a read answers without a turn of the loop). */
export function readText(fd: number, at: number, length: number): string {
  if (scratch.length < length) scratch = Buffer.allocUnsafeSlow(Math.max(length, 2 * scratch.length));
  for (let read = 0; read < length;) {
    const n = fs.readSync(fd, scratch, read, length - read, at + read);
    if (n === 0) throw new Error(`a file ended at byte ${at + read}, before ${at + length}`);
    read += n;
  }
  return scratch.toString('utf8', 0, length);
}

/** The unsigned 32-bit little-endian number at `at` of a file. */
export function readUInt32(fd: number, at: number): number {
  const got = fs.readSync(fd, scratch, 0, 4, at);
  if (got < 4) throw new Error(`a file ended at byte ${at + got}, before ${at + 4}`);
  return scratch.readUInt32LE(0);
}

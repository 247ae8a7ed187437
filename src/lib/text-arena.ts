/**
 * Texts kept for long outside the JavaScript heap: in slabs of Buffer memory, each text
 * written once as UTF-8 behind its length, and found again by a number. A string kept for
 * days is old-generation heap that every collection has to account for; a slab is one
 * small object however many texts it holds. Reading a text back makes a short-lived string.
 *
 * Texts are released one by one; a slab is freed once every text in it is released and
 * it is no longer the one being filled. Kept for a retention, texts are released about in
 * the order they were added, so slabs empty from the oldest on and little space is stranded.
 *
 * Given a scratch file, a full slab is written there and its memory let go (slab-file.ts):
 * at 100,000 load balancers the audit log's texts were 114 MB of the process's memory.
 * A slab the disk refuses stays in memory.
 */
import { known } from './known';
import { LENGTH_BYTES, SlabFile } from './slab-file';

const SLAB_BYTES = 1 << 20;

interface Slab {
  /** null once written to the scratch file. */
  buffer: Buffer | null;
  /** Texts in it not yet released. */
  live: number;
}

export interface ArenaSpill {
  /** Where the scratch file is made (the data directory). */
  directory: string;
  /** Told once when the file cannot be opened or written: slabs stay in memory then. */
  failed: (err: unknown) => void;
}

export class TextArena {
  private readonly slabs = new Map<number, Slab>();
  /** The scratch file; `writing` until the disk refused a slab (those written stay readable). */
  private spill: { file: SlabFile; failed: (err: unknown) => void; writing: boolean } | null = null;
  /**
   * The buffer of the slab last written out, filled again next: a megabyte freed and
   * allocated for every slab raised glibc's mmap threshold past it, and slabs then came
   * from the malloc heap, whose freed pages stayed in the process's RSS.
   */
  private spare: Buffer | null = null;
  /** Slab numbers given back, taken again first so that handles stay small integers. */
  private readonly freeNumbers: number[] = [];
  private nextNumber = 0;
  private filling: { number: number; slab: Slab; buffer: Buffer } | null = null;
  /** Where the next text goes in the slab being filled. */
  private used = 0;

  constructor(spill?: ArenaSpill) {
    if (!spill) return;
    try {
      this.spill = { file: SlabFile.open(spill.directory, SLAB_BYTES), failed: spill.failed, writing: true };
    } catch (err) {
      spill.failed(err);
    }
  }

  /** Keeps a text; the number returned reads it back until it is released. */
  add(text: string): number {
    const length = Buffer.byteLength(text);
    let filling = this.filling;
    if (!filling || this.used + LENGTH_BYTES + length > filling.buffer.length) {
      this.retireFilling();
      // A text larger than a slab gets a slab of its own size.
      const buffer = this.takeSpare(LENGTH_BYTES + length) ?? Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, LENGTH_BYTES + length));
      const slab = { buffer, live: 0 };
      filling = this.filling = { number: this.freeNumbers.pop() ?? this.nextNumber++, slab, buffer };
      this.slabs.set(filling.number, slab);
      this.used = 0;
    }
    const at = this.used;
    filling.buffer.writeUInt32LE(length, at);
    filling.buffer.write(text, at + LENGTH_BYTES, length, 'utf8');
    this.used = at + LENGTH_BYTES + length;
    filling.slab.live++;
    // A full slab is let go at once, so that it is freed with its last text (a large text's slab with it).
    if (this.used + LENGTH_BYTES >= filling.buffer.length) this.retireFilling();
    // A text starts below SLAB_BYTES in its slab (a slab of its own holds it at 0).
    return filling.number * SLAB_BYTES + at;
  }

  text(handle: number): string {
    const { buffer } = this.slabOf(handle);
    const at = handle % SLAB_BYTES;
    if (!buffer) return known(this.spill, 'the scratch file of a written slab').file.text(Math.floor(handle / SLAB_BYTES), at);
    const start = at + LENGTH_BYTES;
    return buffer.toString('utf8', start, start + buffer.readUInt32LE(at));
  }

  release(handle: number): void {
    const number = Math.floor(handle / SLAB_BYTES);
    const slab = this.slabOf(handle);
    slab.live--;
    if (slab.live === 0 && this.filling?.number !== number) this.free(number);
  }

  /** Bytes of slab memory held. */
  get bytes(): number {
    let bytes = 0;
    for (const slab of this.slabs.values()) bytes += slab.buffer?.length ?? 0;
    return bytes;
  }

  /** Slabs written to the scratch file and not yet freed. */
  get slabsWritten(): number {
    let count = 0;
    for (const slab of this.slabs.values()) if (!slab.buffer) count++;
    return count;
  }

  /** Closes the scratch file; the arena holds nothing after. */
  close(): void {
    this.spill?.file.close();
    this.spill = null;
    this.spare = null;
    this.slabs.clear();
    this.filling = null;
  }

  private slabOf(handle: number): Slab {
    const slab = this.slabs.get(Math.floor(handle / SLAB_BYTES));
    if (!slab) throw new Error(`no text ${handle} in the arena`);
    return slab;
  }

  /** The slab being filled is full: it is freed now if every text in it went already, else written out if it can be. */
  private retireFilling(): void {
    const filling = this.filling;
    this.filling = null;
    if (!filling) return;
    if (filling.slab.live === 0) this.free(filling.number);
    else this.writeOut(filling.slab, filling.buffer, filling.number);
  }

  /** Writes a slab to the scratch file and lets its memory go; a slab of one large text stays (it does not fit a place). */
  private writeOut(slab: Slab, buffer: Buffer, number: number): void {
    const spill = this.spill;
    if (!spill?.writing || buffer.length !== SLAB_BYTES) return;
    try {
      spill.file.write(number, buffer, this.used);
      slab.buffer = null;
      this.spare = buffer;
    } catch (err) {
      // A full disk: this slab and the next stay in memory, as without a file.
      spill.writing = false;
      spill.failed(err);
    }
  }

  /** The buffer of the slab last written out, for the next slab, if `bytes` fit in it. */
  private takeSpare(bytes: number): Buffer | null {
    const spare = this.spare;
    if (!spare || bytes > spare.length) return null;
    this.spare = null;
    return spare;
  }

  private free(number: number): void {
    this.slabs.delete(number);
    this.freeNumbers.push(number);
  }
}

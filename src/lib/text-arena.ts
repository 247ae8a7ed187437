/**
 * Texts kept for long outside the JavaScript heap: in slabs of Buffer memory, each text
 * written once as UTF-8 behind its length, and found again by a number. A string kept for
 * days is old-generation heap that every collection has to account for; a slab is one
 * small object however many texts it holds. Reading a text back makes a short-lived string.
 *
 * Texts are released one by one; a slab is freed once every text in it is released and
 * it is no longer the one being filled. Kept for a retention, texts are released about in
 * the order they were added, so slabs empty from the oldest on and little space is stranded.
 */
const SLAB_BYTES = 1 << 20;
const LENGTH_BYTES = 4;

interface Slab {
  readonly buffer: Buffer;
  /** Texts in it not yet released. */
  live: number;
}

export class TextArena {
  private readonly slabs = new Map<number, Slab>();
  /** Slab numbers given back, taken again first so that handles stay small integers. */
  private readonly freeNumbers: number[] = [];
  private nextNumber = 0;
  private filling: { number: number; slab: Slab } | null = null;
  /** Where the next text goes in the slab being filled. */
  private used = 0;

  /** Keeps a text; the number returned reads it back until it is released. */
  add(text: string): number {
    const length = Buffer.byteLength(text);
    let filling = this.filling;
    if (!filling || this.used + LENGTH_BYTES + length > filling.slab.buffer.length) {
      this.retireFilling();
      // A text larger than a slab gets a slab of its own size.
      const slab = { buffer: Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, LENGTH_BYTES + length)), live: 0 };
      filling = this.filling = { number: this.freeNumbers.pop() ?? this.nextNumber++, slab };
      this.slabs.set(filling.number, slab);
      this.used = 0;
    }
    const at = this.used;
    filling.slab.buffer.writeUInt32LE(length, at);
    filling.slab.buffer.write(text, at + LENGTH_BYTES, length, 'utf8');
    this.used = at + LENGTH_BYTES + length;
    filling.slab.live++;
    // A full slab is let go at once, so that it is freed with its last text (a large text's slab with it).
    if (this.used + LENGTH_BYTES >= filling.slab.buffer.length) this.retireFilling();
    // A text starts below SLAB_BYTES in its slab (a slab of its own holds it at 0).
    return filling.number * SLAB_BYTES + at;
  }

  text(handle: number): string {
    const { buffer } = this.slabOf(handle);
    const at = handle % SLAB_BYTES;
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
    for (const slab of this.slabs.values()) bytes += slab.buffer.length;
    return bytes;
  }

  private slabOf(handle: number): Slab {
    const slab = this.slabs.get(Math.floor(handle / SLAB_BYTES));
    if (!slab) throw new Error(`no text ${handle} in the arena`);
    return slab;
  }

  /** The slab being filled is full: it is freed now if every text in it went already. */
  private retireFilling(): void {
    const filling = this.filling;
    this.filling = null;
    if (filling && filling.slab.live === 0) this.free(filling.number);
  }

  private free(number: number): void {
    this.slabs.delete(number);
    this.freeNumbers.push(number);
  }
}

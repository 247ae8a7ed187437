/**
 * The off-heap text arena (src/lib/text-arena.ts). Property: under any interleaving of
 * adds and releases, every text not released reads back as it was added, a slab whose
 * texts all went is freed, and slab numbers are taken again, so the handles stay small.
 */
import fc from 'fast-check';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TextArena } from '../../src/lib/text-arena';

const SLAB = 1 << 20;

type Step = { add: string } | { release: number };

const textArbitrary = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 8 },
  { arbitrary: fc.string({ maxLength: 3000 }).map((s) => s.repeat(100)), weight: 2 },
  // Larger than a slab: it gets one of its own.
  { arbitrary: fc.constantFrom('é', 'x', '😀').map((c) => c.repeat(SLAB / 2 + 7)), weight: 1 },
);

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: textArbitrary.map((add) => ({ add })), weight: 3 },
  { arbitrary: fc.nat().map((release) => ({ release })), weight: 2 },
);

describe('TextArena', () => {
  it('reads back every text until it is released, and frees what was released', () => {
    fc.assert(
      fc.property(fc.array(stepArbitrary, { maxLength: 120 }), (steps) => {
        const arena = new TextArena();
        const live = new Map<number, string>();
        for (const step of steps) {
          if ('add' in step) {
            const handle = arena.add(step.add);
            expect(live.has(handle)).toBe(false);
            live.set(handle, step.add);
          } else if (live.size > 0) {
            const handle = [...live.keys()][step.release % live.size];
            arena.release(handle);
            live.delete(handle);
          }
          for (const [handle, text] of live) expect(arena.text(handle)).toBe(text);
        }
        const largest = Math.max(0, ...[...live.values()].map((text) => Buffer.byteLength(text)));
        // Every slab holds a live text, but for the one being filled.
        expect(arena.bytes).toBeLessThanOrEqual((live.size + 1) * Math.max(SLAB, largest + 4));
        for (const handle of live.keys()) arena.release(handle);
        expect(arena.bytes).toBeLessThanOrEqual(SLAB + largest + 4);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps handles small integers under a retention: slab numbers are used again', () => {
    const arena = new TextArena();
    const kept: number[] = [];
    const text = 'e'.repeat(600);
    // Twenty slabs' worth through a window of about two.
    for (let i = 0; i < 35_000; i++) {
      kept.push(arena.add(text));
      if (kept.length > 3_000) arena.release(kept.shift()!);
    }
    expect(Math.max(...kept)).toBeLessThan(4 * SLAB);
    expect(arena.bytes).toBeLessThanOrEqual(3 * SLAB);
    expect(arena.text(kept[kept.length - 1])).toBe(text);
  });

  describe('with a scratch file', () => {
    let directory: string;
    beforeEach(() => {
      directory = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-arena-'));
    });
    afterEach(() => {
      fs.rmSync(directory, { recursive: true, force: true });
    });

    it('writes full slabs out, holds one slab of memory, and reads every live text back from the file', () => {
      fc.assert(
        fc.property(fc.array(stepArbitrary, { maxLength: 80 }), (steps) => {
          const failures: unknown[] = [];
          const arena = new TextArena({ directory, failed: (err) => failures.push(err) });
          const live = new Map<number, string>();
          for (const step of steps) {
            if ('add' in step) live.set(arena.add(step.add), step.add);
            else if (live.size > 0) {
              const handle = [...live.keys()][step.release % live.size];
              arena.release(handle);
              live.delete(handle);
            }
          }
          for (const [handle, text] of live) expect(arena.text(handle)).toBe(text);
          // The slab being filled, and the slabs of one large text each, stay in memory.
          const largeBytes = [...live.values()].map((text) => Buffer.byteLength(text) + 4).filter((bytes) => bytes > SLAB);
          expect(arena.bytes).toBeLessThanOrEqual(SLAB + largeBytes.reduce((sum, bytes) => sum + bytes, 0));
          expect(failures).toEqual([]);
          arena.close();
          // The file was removed when opened: nothing is left in the directory.
          expect(fs.readdirSync(directory)).toEqual([]);
        }),
        { numRuns: 40 },
      );
    });

    it('keeps a retention of texts on disk: memory stays one slab while the file holds the rest', () => {
      const arena = new TextArena({
        directory,
        failed: (err) => {
          throw err;
        },
      });
      const text = 'e'.repeat(600);
      const kept: number[] = [];
      for (let i = 0; i < 20_000; i++) kept.push(arena.add(text));
      expect(arena.bytes).toBe(SLAB);
      expect(arena.slabsWritten).toBeGreaterThanOrEqual(10);
      expect(arena.text(kept[0])).toBe(text);
      expect(arena.text(kept[kept.length - 1])).toBe(text);
      for (const handle of kept) arena.release(handle);
      expect(arena.slabsWritten).toBe(0);
      arena.close();
    });

    it('keeps texts in memory when the scratch file cannot be made, and says so', () => {
      const failures: unknown[] = [];
      const arena = new TextArena({ directory: path.join(directory, 'missing'), failed: (err) => failures.push(err) });
      const handles = Array.from({ length: 3_000 }, (_, i) => arena.add(`${i}`.repeat(200)));
      expect(failures).toHaveLength(1);
      expect(arena.slabsWritten).toBe(0);
      expect(arena.text(handles[0])).toBe('0'.repeat(200));
    });
  });

  it('refuses a handle it does not hold', () => {
    const arena = new TextArena();
    const handle = arena.add('x');
    expect(() => arena.text(handle + 5 * SLAB)).toThrow('no text');
  });
});

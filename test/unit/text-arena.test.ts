/**
 * The off-heap text arena (src/lib/text-arena.ts). Property: under any interleaving of
 * adds and releases, every text not released reads back as it was added, a slab whose
 * texts all went is freed, and slab numbers are taken again, so the handles stay small.
 */
import fc from 'fast-check';
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

  it('refuses a handle it does not hold', () => {
    const arena = new TextArena();
    const handle = arena.add('x');
    expect(() => arena.text(handle + 5 * SLAB)).toThrow('no text');
  });
});

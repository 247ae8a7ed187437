/**
 * SortedKeys (src/lib/sorted-keys.ts) reads like a sorted set of its keys. Property: after
 * any adds (duplicates included) and front trims, its size, membership and walks from any
 * key, up or down, are those of a plain sorted array.
 */
import fc from 'fast-check';
import { SortedKeys } from '../../src/lib/sorted-keys';

const keyArbitrary = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '\u0000'), maxLength: 4 });
type Step = { add: string } | { deleteBelow: string };

describe('SortedKeys', () => {
  it('holds, trims and walks as a sorted array of distinct keys', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof({ arbitrary: keyArbitrary.map((add): Step => ({ add })), weight: 5 }, { arbitrary: keyArbitrary.map((deleteBelow): Step => ({ deleteBelow })), weight: 1 }), { maxLength: 60 }),
        fc.array(fc.option(keyArbitrary, { nil: undefined }), { minLength: 1, maxLength: 5 }),
        (steps, probes) => {
          const keys = new SortedKeys();
          let model: string[] = [];
          for (const step of steps) {
            if ('add' in step) {
              keys.add(step.add);
              if (!model.includes(step.add)) model = [...model, step.add].sort();
            } else {
              keys.deleteBelow(step.deleteBelow);
              model = model.filter((key) => key >= step.deleteBelow);
            }
          }
          expect(keys.size).toBe(model.length);
          expect([...keys.ascending()]).toEqual(model);
          for (const probe of probes) {
            expect([...keys.ascending(probe)]).toEqual(model.filter((key) => probe === undefined || key >= probe));
            expect([...keys.descending(probe)]).toEqual(model.filter((key) => probe === undefined || key < probe).reverse());
            if (probe !== undefined) expect(keys.has(probe)).toBe(model.includes(probe));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

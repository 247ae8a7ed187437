/**
 * SortedKeys (src/lib/sorted-keys.ts) reads like a sorted set of its keys. Property: after
 * any adds (duplicates included) and front trims, its size, membership and walks from any
 * key, up or down, are those of a plain sorted array. SortedMap reads like a Map whose keys
 * are walked in order: after any sets (overwrites included) and front trims, each key has
 * its last value, a trim hands over exactly the pairs it drops, in order, and the walks are
 * those of the Map's sorted keys.
 */
import fc from 'fast-check';
import { SortedKeys, SortedMap } from '../../src/lib/sorted-keys';

const keyArbitrary = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '\u0000'), maxLength: 4 });
type Step = { add: string } | { deleteBelow: string };

describe('SortedKeys', () => {
  it('holds, trims and walks as a sorted array of distinct keys', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            { arbitrary: keyArbitrary.map((add): Step => ({ add })), weight: 5 },
            { arbitrary: keyArbitrary.map((deleteBelow): Step => ({ deleteBelow })), weight: 1 },
          ),
          { maxLength: 60 },
        ),
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

type MapStep = { set: string; value: number } | { deleteBelow: string };

describe('SortedMap', () => {
  it('holds, overwrites, trims and walks as a Map with its keys in order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            { arbitrary: fc.record({ set: keyArbitrary, value: fc.integer() }).map((step): MapStep => step), weight: 5 },
            { arbitrary: keyArbitrary.map((deleteBelow): MapStep => ({ deleteBelow })), weight: 1 },
          ),
          { maxLength: 60 },
        ),
        fc.array(fc.option(keyArbitrary, { nil: undefined }), { minLength: 1, maxLength: 5 }),
        (steps, probes) => {
          const map = new SortedMap<number>();
          const model = new Map<string, number>();
          for (const step of steps) {
            if ('set' in step) {
              map.set(step.set, step.value);
              model.set(step.set, step.value);
            } else {
              const dropped: Array<[string, number]> = [];
              map.deleteBelow(step.deleteBelow, (key, value) => dropped.push([key, value]));
              const expected = [...model].filter(([key]) => key < step.deleteBelow).sort(([a], [b]) => (a < b ? -1 : 1));
              expect(dropped).toEqual(expected);
              for (const [key] of expected) model.delete(key);
            }
          }
          const sorted = [...model.keys()].sort();
          expect(map.size).toBe(model.size);
          expect([...map.ascending()]).toEqual(sorted);
          for (const key of sorted) expect(map.get(key)).toBe(model.get(key));
          for (const probe of probes) {
            expect([...map.ascending(probe)]).toEqual(sorted.filter((key) => probe === undefined || key >= probe));
            expect([...map.descending(probe)]).toEqual(sorted.filter((key) => probe === undefined || key < probe).reverse());
            if (probe !== undefined) {
              expect(map.has(probe)).toBe(model.has(probe));
              expect(map.get(probe)).toBe(model.get(probe));
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

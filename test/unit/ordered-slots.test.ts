/**
 * OrderedSlots (src/lib/ordered-slots.ts) against a sorted array: for any additions and
 * deletions of slots whose order reads a column with ties (broken by the slot, as the list
 * indexes break them by id), every walk, from the start or from any position, either way,
 * answers what the sorted array holds there. Leaves of 8 slots, so that a few hundred
 * changes grow, split, append past, empty and merge leaves.
 */
import fc from 'fast-check';
import { NO_SLOT, OrderedSlots, SlotWalk } from '../../src/lib/ordered-slots';

const PROBE = 0;

function drain(walk: SlotWalk): number[] {
  const slots: number[] = [];
  for (let slot = walk.next(); slot !== NO_SLOT; slot = walk.next()) slots.push(slot);
  return slots;
}

type Change = { add: boolean; slot: number; value: number };

const changeArbitrary: fc.Arbitrary<Change> = fc.record({
  add: fc.boolean(),
  slot: fc.integer({ min: 1, max: 120 }),
  // Few values, so that many slots tie on them; sometimes growing, as creation times do.
  value: fc.integer({ min: 0, max: 12 }),
});

describe('OrderedSlots', () => {
  it('walks as a sorted array does, after any additions and deletions', () => {
    fc.assert(
      fc.property(
        fc.array(changeArbitrary, { maxLength: 300, size: 'max' }),
        // Then mostly deletions, so that leaves empty out and merge.
        fc.array(
          changeArbitrary.map((change) => ({ ...change, add: change.slot % 4 === 0 })),
          { maxLength: 300, size: 'max' },
        ),
        fc.boolean(),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 121 }),
        (filling, emptying, inOrder, probeValue, probeSlot) => {
          const values: number[] = [];
          const compare = (a: number, b: number) => values[a] - values[b] || a - b;
          const slots = new OrderedSlots(compare, 8);
          let reference: number[] = [];
          let clock = 0;
          for (const change of [...filling, ...emptying]) {
            if (change.add) {
              if (reference.includes(change.slot)) continue;
              // In order: every value at or above the last, as an index filled in creation order.
              values[change.slot] = inOrder ? (clock += change.value % 2) : change.value;
              slots.add(change.slot);
              reference.push(change.slot);
              reference.sort(compare);
            } else {
              const held = reference.includes(change.slot);
              expect(slots.delete(change.slot)).toBe(held);
              reference = reference.filter((slot) => slot !== change.slot);
            }
            expect(slots.size).toBe(reference.length);
          }
          expect(drain(slots.ascending())).toEqual(reference);
          expect(drain(slots.descending())).toEqual([...reference].reverse());
          values[PROBE] = inOrder ? probeValue % (clock + 2) : probeValue;
          // The probe sorts by its value, then as slot `probeSlot` would: a position between or on slots.
          const at = (slot: number) => values[slot] - values[PROBE] || slot - probeSlot;
          const withProbe = (a: number, b: number) => (a === PROBE ? -at(b) : b === PROBE ? at(a) : compare(a, b));
          const probed = new OrderedSlots(withProbe, 8);
          for (const slot of reference) probed.add(slot);
          expect(drain(probed.ascending(PROBE))).toEqual(reference.filter((slot) => at(slot) >= 0));
          expect(drain(probed.ascending(PROBE, true))).toEqual(reference.filter((slot) => at(slot) > 0));
          expect(drain(probed.descending(PROBE))).toEqual(reference.filter((slot) => at(slot) < 0).reverse());
        },
      ),
      { numRuns: 100 },
    );
  });
});

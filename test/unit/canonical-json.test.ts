import fc from 'fast-check';
import { canonicalJson, sameJson, sameJsonApartFrom } from '../../src/lib/canonical-json';

describe('canonical JSON', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: [{ z: null, y: 'x' }, 2] })).toBe('{"a":[{"y":"x","z":null},2],"b":1}');
  });

  it('sees an object with the API server key order as the same one', () => {
    const written = [{ server_id: 'svr_1', port: 80, status: 'healthy', drain_until: null }];
    const readBack = [{ drain_until: null, port: 80, server_id: 'svr_1', status: 'healthy' }];
    expect(JSON.stringify(written)).not.toBe(JSON.stringify(readBack));
    expect(sameJson(written, readBack)).toBe(true);
  });

  it('still tells real differences apart', () => {
    expect(sameJson({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJson({ a: null }, {})).toBe(false);
    expect(sameJson({ a: { b: 1 } }, { a: { b: '1' } })).toBe(false);
  });
});

describe('sameJsonApartFrom', () => {
  const member = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.integer({ min: 0, max: 3 }),
    fc.constantFrom('a', 'b'),
    fc.constant({ x: 1, y: [1] }),
    fc.constant({ y: [1], x: 1 }),
    fc.constant([{ x: 1 }]),
  );
  const objectOf = fc.dictionary(fc.constantFrom('p', 'q', 'r', 's', 'pending_events'), member);

  it('answers as sameJson of both objects without the ignored members', () => {
    fc.assert(
      fc.property(objectOf, objectOf, fc.subarray(['p', 'q', 'pending_events']), (a, b, ignored) => {
        const without = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([key]) => !ignored.includes(key)));
        expect(sameJsonApartFrom(a, b, new Set(ignored))).toBe(sameJson(without(a), without(b)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('compares shared members by reference and serialises only the members that differ', () => {
    const shared = { conditions: [{ type: 'Ready', status: 'True' }] };
    const before = { ...shared, status: 'running', pending_events: [{ id: 'evt_1' }] };
    const after = { ...before, pending_events: [] };
    expect(sameJsonApartFrom(before, after, new Set(['pending_events']))).toBe(true);
    expect(sameJsonApartFrom(before, { ...after, status: 'stopped' }, new Set(['pending_events']))).toBe(false);
    expect(sameJsonApartFrom({ a: null }, {}, new Set())).toBe(false);
    expect(sameJsonApartFrom({ a: undefined }, {}, new Set())).toBe(true);
  });
});

/**
 * The ordered indexes lists read (src/store/list-index.ts), on their own: the views an
 * object sits in as it changes, seeks from a cursor both ways, filters walked on the most
 * selective tree, the creation window, names and counts.
 */
import fc from 'fast-check';
import { KindIndex, ListedKind } from '../../src/store/list-index';
import type { ListSort, StoredObject } from '../../src/store/types';

const listed: ListedKind = {
  kind: 'Thing',
  nameOf: (spec: { name: string }) => spec.name,
  hiddenStates: ['deleted'],
  filterFields: ['group'],
  counted: (o) => (o.status as { status?: string }).status === 'running',
};

const thing = (id: string, name: string, createdAt: string, status: string | undefined, group = 'g1', team = 'team_a'): StoredObject => ({
  meta: { kind: 'Thing', id, team, resourceVersion: '1', generation: 1, createdAt, updatedAt: createdAt, labels: {} },
  spec: { name, group },
  status: status === undefined ? {} : { status },
});

const ids = (objects: StoredObject[]) => objects.map((o) => o.meta.id);
/** The index keeps the objects themselves here (a store may keep what it makes them from). */
const asKept = (object: StoredObject) => object;

describe('KindIndex', () => {
  let index: KindIndex<StoredObject>;
  const a = thing('id_a', 'zulu', '2026-01-01T00:00:01.000Z', 'running');
  const b = thing('id_b', 'alpha', '2026-01-01T00:00:02.000Z', 'running', 'g2');
  const c = thing('id_c', 'alpha', '2026-01-01T00:00:02.000Z', 'failed');
  const d = thing('id_d', 'mike', '2026-01-01T00:00:03.000Z', 'deleted');
  beforeEach(() => {
    index = new KindIndex(listed, asKept);
    for (const o of [a, b, c, d]) index.replace(undefined, o);
  });

  it('pages by created_at and by name, id breaking ties, both ways, hiding the hidden states by default', () => {
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', limit: 10 }).items)).toEqual(['id_a', 'id_b', 'id_c']);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'desc', limit: 10 }).items)).toEqual(['id_c', 'id_b', 'id_a']);
    expect(ids(index.page('team_a', { sort: 'name', order: 'asc', limit: 10 }).items)).toEqual(['id_b', 'id_c', 'id_a']);
    expect(ids(index.page('team_a', { sort: 'name', order: 'desc', limit: 10 }).items)).toEqual(['id_a', 'id_c', 'id_b']);
    expect(ids(index.page('team_a', { sort: 'name', order: 'asc', status: 'deleted', limit: 10 }).items)).toEqual(['id_d']);
  });

  it('seeks from a position, exclusive, and says where the next page starts', () => {
    const first = index.page('team_a', { sort: 'name', order: 'asc', limit: 1 });
    expect(ids(first.items)).toEqual(['id_b']);
    expect(first.next).toEqual({ value: 'alpha', id: 'id_b' });
    const second = index.page('team_a', { sort: 'name', order: 'asc', after: first.next!, limit: 2 });
    expect(ids(second.items)).toEqual(['id_c', 'id_a']);
    expect(second.next).toBeNull();
    // A position whose object is gone still places the walk.
    expect(ids(index.page('team_a', { sort: 'name', order: 'desc', after: { value: 'mike', id: 'id_gone' }, limit: 5 }).items)).toEqual(['id_c', 'id_b']);
  });

  it('moves an object between status views as its state changes, and drops it when removed or destroyed', () => {
    const stopped = thing('id_a', 'zulu', a.meta.createdAt, 'deleted');
    index.replace(a, stopped);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', status: 'running', limit: 10 }).items)).toEqual(['id_b']);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', status: 'deleted', limit: 10 }).items)).toEqual(['id_a', 'id_d']);
    index.replace(stopped, thing('id_a', 'zulu', a.meta.createdAt, 'destroyed'));
    index.replace(b, undefined);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', status: 'deleted', limit: 10 }).items)).toEqual(['id_d']);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', limit: 10 }).items)).toEqual(['id_c']);
  });

  it('does not list an object before it has a state', () => {
    index.replace(undefined, thing('id_new', 'new', '2026-01-01T00:00:04.000Z', undefined));
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'desc', limit: 1 }).items)).toEqual(['id_c']);
  });

  it('filters by spec fields and by a creation window, with the status filter', () => {
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', where: { group: 'g1' }, limit: 10 }).items)).toEqual(['id_a', 'id_c']);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', where: { group: 'g1' }, status: 'failed', limit: 10 }).items)).toEqual(['id_c']);
    expect(index.page('team_a', { sort: 'created_at', order: 'asc', where: { group: 'none' }, limit: 10 }).items).toEqual([]);
    const window = { from: '2026-01-01T00:00:02.000Z', before: '2026-01-01T00:00:03.000Z' };
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'asc', created: window, limit: 10 }).items)).toEqual(['id_b', 'id_c']);
    expect(ids(index.page('team_a', { sort: 'created_at', order: 'desc', created: window, limit: 10 }).items)).toEqual(['id_c', 'id_b']);
    expect(ids(index.page('team_a', { sort: 'name', order: 'asc', created: { before: '2026-01-01T00:00:02.000Z' }, limit: 10 }).items)).toEqual(['id_a']);
    expect(() => index.page('team_a', { sort: 'name', order: 'asc', where: { other: 'x' }, limit: 1 })).toThrow(/no filter/);
  });

  it('keeps teams apart, finds objects by name and keeps counts', () => {
    index.replace(undefined, thing('id_t2', 'alpha', '2026-01-01T00:00:05.000Z', 'running', 'g1', 'team_b'));
    expect(ids(index.named('team_a', 'alpha'))).toEqual(['id_b', 'id_c']);
    expect(ids(index.named('team_b', 'alpha'))).toEqual(['id_t2']);
    expect(index.named('team_a', 'alph')).toEqual([]);
    expect(index.count('team_a')).toBe(2);
    index.replace(b, thing('id_b', 'alpha', b.meta.createdAt, 'failed', 'g2'));
    expect(index.count('team_a')).toBe(1);
    expect(index.count('team_b')).toBe(1);
    expect(ids(index.page('team_b', { sort: 'name', order: 'asc', limit: 10 }).items)).toEqual(['id_t2']);
  });
});

// With a hidden state, and without one (the name sort's tree of every object is then the shown one).
describe.each([
  ['hiding a state', listed],
  ['hiding none', { ...listed, hiddenStates: [] }],
])('KindIndex against a scan, %s', (_, kind: ListedKind) => {
  const hidden = (state: string | undefined) => state !== undefined && kind.hiddenStates.includes(state);
  const NAMES = ['alpha', 'bravo', 'charlie'];
  const STATES = ['creating', 'running', 'failed', 'deleted', 'destroyed', undefined];
  const GROUPS = ['g1', 'g2'];
  type Change = { pick: number; name: string; state: string | undefined; group: string } | { pick: number; remove: true };
  const change: fc.Arbitrary<Change> = fc.oneof(
    {
      arbitrary: fc.record({ pick: fc.nat(), name: fc.constantFrom(...NAMES), state: fc.constantFrom(...STATES), group: fc.constantFrom(...GROUPS) }),
      weight: 5,
    },
    { arbitrary: fc.record({ pick: fc.nat(), remove: fc.constant(true as const) }), weight: 1 },
  );
  const keyOf = (o: StoredObject, sort: ListSort) => [sort === 'name' ? (o.spec as { name: string }).name : o.meta.createdAt, o.meta.id] as const;
  const before = (x: readonly [string, string], y: readonly [string, string]) => (x[0] !== y[0] ? x[0] < y[0] : x[1] < y[1]);

  it('answers every page as a filter and sort of its objects would, through creates, changes of state, name and field, and removals', () => {
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 40 }), (changes) => {
        const index = new KindIndex(kind, asKept);
        const objects = new Map<string, StoredObject>();
        changes.forEach((c, step) => {
          const id = `id_${c.pick % 8}`;
          const previous = objects.get(id);
          if ('remove' in c) {
            if (previous) index.replace(previous, undefined);
            objects.delete(id);
            return;
          }
          const next = thing(id, c.name, previous?.meta.createdAt ?? `2026-01-01T00:00:${String(step % 6).padStart(2, '0')}.000Z`, c.state, c.group);
          index.replace(previous, next);
          objects.set(id, next);
        });
        const stateOf = (o: StoredObject) => (o.status as { status?: string }).status;
        for (const sort of ['created_at', 'name'] as const) {
          for (const status of [undefined, 'running', 'deleted']) {
            for (const group of [undefined, 'g2']) {
              const expected = [...objects.values()]
                .filter((o) => stateOf(o) !== undefined && stateOf(o) !== 'destroyed')
                .filter((o) => (status === undefined ? !hidden(stateOf(o)) : stateOf(o) === status))
                .filter((o) => group === undefined || (o.spec as { group: string }).group === group)
                .sort((x, y) => (before(keyOf(x, sort), keyOf(y, sort)) ? -1 : 1));
              const page = index.page('team_a', { sort, order: 'asc', status, where: group ? { group } : undefined, limit: 100 });
              expect(ids(page.items)).toEqual(ids(expected));
            }
          }
        }
        // Paged through one or two at a time, both ways, in a creation window: the cursor and the
        // window's edge seek the same order the scan sorts.
        const time = (second: number) => `2026-01-01T00:00:${String(second).padStart(2, '0')}.000Z`;
        const window = { from: time(changes.length % 3), before: time(3 + (changes.length % 4)) };
        for (const sort of ['created_at', 'name'] as const) {
          for (const order of ['asc', 'desc'] as const) {
            const inWindow = [...objects.values()]
              .filter((o) => stateOf(o) !== undefined && stateOf(o) !== 'destroyed' && !hidden(stateOf(o)))
              .filter((o) => o.meta.createdAt >= window.from && o.meta.createdAt < window.before)
              .sort((x, y) => (before(keyOf(x, sort), keyOf(y, sort)) ? -1 : 1));
            if (order === 'desc') inWindow.reverse();
            const paged: StoredObject[] = [];
            let after: { value: string; id: string } | undefined;
            for (let pages = 0; pages < 50; pages++) {
              const page = index.page('team_a', { sort, order, created: window, after, limit: 1 + (changes.length % 2) });
              paged.push(...page.items);
              if (!page.next) break;
              after = page.next;
            }
            expect(ids(paged)).toEqual(ids(inWindow));
          }
        }
        const running = [...objects.values()].filter((o) => stateOf(o) === 'running').length;
        expect(index.count('team_a')).toBe(running);
        for (const name of NAMES) {
          const named = [...objects.values()].filter(
            (o) => (o.spec as { name: string }).name === name && stateOf(o) !== undefined && stateOf(o) !== 'destroyed',
          );
          expect(ids(index.named('team_a', name)).sort()).toEqual(ids(named).sort());
        }
      }),
      { numRuns: 500 },
    );
  });
});

/**
 * The property of a page walk over a store's ordered indexes (Store.page), as docs/api.md
 * states it for lists: over random interleavings of creates, deletions and status changes
 * (which move objects between the status indexes) with the pages of a walk, in every
 * sort, order and filter, a walk visits every object that matched its list for the whole
 * walk exactly once, never an object twice, only objects that matched when their page was
 * read, and in order. Shared by the embedded store's test and the Kubernetes store's.
 */
import fc from 'fast-check';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import type { ListedKind } from '../../src/store/list-index';
import type { PageRequest, Store, StoredObject } from '../../src/store/types';

const KIND = loadBalancerFamily.kind;
const STATES = ['creating', 'running', 'failed', 'deleted', 'destroyed'] as const;
const ALGORITHMS = ['round_robin', 'least_connections', 'ip_hash'] as const;
type State = (typeof STATES)[number];

/** Load balancers as the test lists them: `deleted` hidden by default, filtered by algorithm. */
export const listedForTest: ListedKind = {
  kind: KIND,
  nameOf: (spec: { name: string }) => spec.name,
  hiddenStates: ['deleted'],
  filterFields: ['algorithm'],
};

type Action =
  | { op: 'create'; name: string; algorithm: string; state: State }
  | { op: 'delete'; pick: number }
  | { op: 'status'; pick: number; state: State }
  | { op: 'page' };

// Few names, so that names tie and the id breaks the tie.
const name = fc.constantFrom('alpha', 'bravo', 'charlie', 'delta', 'echo');
const state = fc.constantFrom(...STATES);
const create = fc.record({ op: fc.constant('create' as const), name, algorithm: fc.constantFrom(...ALGORITHMS), state });
const action: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: create, weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('status' as const), pick: fc.nat(), state }), weight: 2 },
  { arbitrary: fc.constant({ op: 'page' as const }), weight: 2 },
);
const request = fc.record({
  sort: fc.constantFrom('created_at' as const, 'name' as const),
  order: fc.constantFrom('asc' as const, 'desc' as const),
  status: fc.option(fc.constantFrom('creating', 'running', 'failed', 'deleted'), { nil: undefined }),
  algorithm: fc.option(fc.constantFrom(...ALGORITHMS), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 4 }),
});

const stateOf = (o: StoredObject) => (o.status as { status: string }).status;
const specOf = (o: StoredObject) => o.spec as { name: string; algorithm: string };

function statusFor(state: State): Record<string, unknown> {
  return {
    status: state,
    status_reason: null,
    observed_generation: 1,
    observed_config: '',
    deleted_at: null,
    conditions: [],
    pending_events: [],
    backends: [],
  };
}

export interface WalkRuns {
  /** A store to run on; `team` is fresh for every run, so runs do not see each other's objects. */
  store: () => Store;
  numRuns: number;
  maxActions: number;
}

/** Runs the property; every run ends with the objects it made removed. */
export async function checkPageWalks({ store: storeOf, numRuns, maxActions }: WalkRuns): Promise<void> {
  let run = 0;
  const property = fc.asyncProperty(
    fc.array(create, { maxLength: 12 }),
    fc.array(action, { maxLength: maxActions }),
    request,
    async (initial, actions, asked) => {
      const store = storeOf();
      // A team id as the service makes them (16 to 26 lowercase letters and digits), a namespace in Kubernetes.
      const team = `team_walk${process.pid}x${run++}`.padEnd(21, '0');
      const alive = new Map<string, StoredObject>();
      let serial = 0;
      const make = async (c: { name: string; algorithm: string; state: State }) => {
        const spec = {
          name: c.name,
          region: 'fra1',
          algorithm: c.algorithm,
          protocol: 'http',
          port: 80,
          health_check_path: '/health',
          sticky_sessions: false,
          backends: [],
        };
        const id = `lb_walk${String(++serial).padStart(4, '0')}${run.toString(36)}`;
        alive.set(id, await store.create({ meta: { kind: KIND, id, team }, spec, status: statusFor(c.state) }));
      };
      const matches = (o: StoredObject) => {
        const s = stateOf(o);
        if (s === 'destroyed') return false;
        if (asked.status !== undefined ? s !== asked.status : s === 'deleted') return false;
        return asked.algorithm === undefined || specOf(o).algorithm === asked.algorithm;
      };
      const keyOf = (o: StoredObject): [string, string] => [asked.sort === 'name' ? specOf(o).name : o.meta.createdAt, o.meta.id];
      try {
        for (const c of initial) await make(c);
        // What matches at the start and never stops matching must be visited exactly once.
        const throughout = new Set([...alive.values()].filter(matches).map((o) => o.meta.id));
        const drop = (o: StoredObject | undefined) => o && !matches(o) && throughout.delete(o.meta.id);
        const visited: StoredObject[] = [];
        let after: PageRequest['after'];
        let done = false;
        const readPage = async () => {
          const page = await store.page(KIND, team, {
            sort: asked.sort,
            order: asked.order,
            status: asked.status,
            ...(asked.algorithm ? { where: { algorithm: asked.algorithm } } : {}),
            after,
            limit: asked.limit,
          });
          for (const o of page.items) {
            if (!matches(o)) throw new Error(`page holds ${o.meta.id} (${stateOf(o)}, ${specOf(o).algorithm}), which the list does not show`);
            // The latest version of it, as the client that wrote it knows it (read your writes).
            expect(o.meta.resourceVersion).toBe(alive.get(o.meta.id)?.meta.resourceVersion);
          }
          expect(page.items.length).toBeLessThanOrEqual(asked.limit);
          if (page.next) {
            expect(page.items.length).toBe(asked.limit);
            const last = page.items[page.items.length - 1];
            expect(page.next).toEqual({ value: keyOf(last)[0], id: last.meta.id });
          }
          visited.push(...page.items);
          // A walk that does not advance would never end: more rows than were ever made is a repeat.
          if (visited.length > serial)
            throw new Error(`the walk visited ${visited.length} rows of ${serial} ever made: ${visited.map((o) => o.meta.id).join(' ')}`);
          after = page.next ?? undefined;
          done = page.next === null;
        };
        for (const a of actions) {
          if (a.op === 'page') {
            if (!done) await readPage();
          } else if (a.op === 'create') {
            await make(a);
          } else if (alive.size > 0) {
            const ids = [...alive.keys()];
            const id = ids[a.pick % ids.length];
            if (a.op === 'delete') {
              await store.remove(KIND, team, id);
              alive.delete(id);
              throughout.delete(id);
            } else {
              const current = alive.get(id)!;
              const next = await store.updateStatus({ ...current, status: statusFor(a.state) });
              alive.set(id, next);
              drop(next);
            }
          }
        }
        while (!done) await readPage();

        const ids = visited.map((o) => o.meta.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of throughout) expect(ids).toContain(id);
        const direction = asked.order === 'asc' ? 1 : -1;
        for (let i = 1; i < visited.length; i++) {
          const [a, b] = [keyOf(visited[i - 1]), keyOf(visited[i])];
          const compared = a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
          expect(compared * direction).toBe(-1);
        }
      } finally {
        for (const id of alive.keys()) await store.remove(KIND, team, id).catch(() => undefined);
      }
    },
  );
  await fc.assert(property, { numRuns });
}

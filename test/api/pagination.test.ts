/**
 * Keyset pagination of the load balancer list: a page walk visits every load balancer
 * that existed for the whole walk exactly once, whatever is created or deleted meanwhile,
 * in every sort and order; and the limit defaults to 50 with next_cursor null at the end.
 * Each scenario runs in a team of its own, so the lists hold only what it made.
 */
import { createTeam } from '../../src/accounts/bootstrap';
import { startTestService, TestService } from '../helpers/service';

const LBS = '/api/v1/load-balancers';

interface Row {
  id: string;
  name: string;
  created_at: string;
}

describe('pagination of load balancers', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  async function newTeamKey(name: string): Promise<string> {
    const team = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: name, ownerName: name, ownerEmail: `${name}@example.com` });
    return team.token;
  }

  async function createLb(key: string, name: string): Promise<Row> {
    const res = await t.api('POST', LBS, { name, region: 'fra1' }, { key });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function deleteLb(key: string, id: string): Promise<void> {
    expect((await t.api('DELETE', `${LBS}/${id}`, undefined, { key })).status).toBe(200);
  }

  /** Creates and deletes load balancers until stopped; returns every id it ever made. */
  function churn(key: string): { stop: () => Promise<Set<string>> } {
    const made = new Set<string>();
    const alive: string[] = [];
    let running = true;
    const loop = (async () => {
      for (let round = 0; running; round++) {
        // Names spread over the alphabet, so new ones land before and after the cursor.
        const letter = 'abcdefghijklmnopqrstuvwxyz'[(round * 7) % 26];
        const lb = await createLb(key, `${letter}-churn-${round}`);
        made.add(lb.id);
        alive.push(lb.id);
        if (round % 2 === 1) await deleteLb(key, alive.splice(round % alive.length, 1)[0]);
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        return made;
      },
    };
  }

  /** Follows next_cursor to the end; checks page sizes and that each page is in order. */
  async function walk(key: string, sort: string, order: string, limit: number, between: () => Promise<void> = async () => {}): Promise<Row[]> {
    const seen: Row[] = [];
    let cursor: string | null = null;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(200);
      const query: string = `sort=${sort}&order=${order}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await t.api('GET', `${LBS}?${query}`, undefined, { key });
      expect(res.status).toBe(200);
      const page: Row[] = res.body.data;
      expect(page.length).toBeLessThanOrEqual(limit);
      expect(page).toEqual(sorted(page, sort, order));
      seen.push(...page);
      cursor = res.body.meta.next_cursor;
      if (cursor === null) return seen;
      expect(page).toHaveLength(limit);
      await between();
    }
  }

  /** The docs/api.md order: by the sort field, ties broken by id, both in the given direction. */
  function sorted(rows: Row[], sort: string, order: string): Row[] {
    const keyOf = (row: Row) => (sort === 'name' ? row.name : row.created_at);
    const direction = order === 'asc' ? 1 : -1;
    // Code-unit order, not locale order: the docs/api.md order is the same for every client.
    const compare = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
    return [...rows].sort((a, b) => direction * (compare(keyOf(a), keyOf(b)) || compare(a.id, b.id)));
  }

  it.each([
    ['name', 'asc'],
    ['name', 'desc'],
    ['created_at', 'asc'],
    ['created_at', 'desc'],
  ])('walks sort=%s order=%s with limit 7 under concurrent creates and deletes, visiting every lasting load balancer once', async (sort, order) => {
    const key = await newTeamKey(`walk-${sort}-${order}`);
    // Repeated names, so ties broken by id sit on page boundaries.
    const lasting: Row[] = [];
    for (let i = 0; i < 40; i++) lasting.push(await createLb(key, `lasting-${i % 9}`));
    const goneBefore = await createLb(key, 'lasting-gone');
    await deleteLb(key, goneBefore.id);
    const early = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => createLb(key, `m-early-${i}`)));

    const background = churn(key);
    let step = 0;
    const seen = await walk(key, sort, order, 7, async () => {
      // Besides the background loop, a change right between two pages, now and then one
      // that removes something that was there when the walk started.
      step++;
      if (step % 2 === 0 && early.length) await deleteLb(key, early.shift()!.id);
      else await createLb(key, `${step % 2 ? 'a' : 'z'}-between-${step}`);
    });
    const churned = await background.stop();

    const ids = seen.map((row) => row.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const lb of lasting) expect(ids.filter((id) => id === lb.id)).toHaveLength(1);
    expect(ids).not.toContain(goneBefore.id);
    expect(churned.size).toBeGreaterThan(0);
    // The walk as a whole keeps the order, not only each page.
    expect(seen).toEqual(sorted(seen, sort, order));
  });

  it('pages by 50 by default, and the last page has next_cursor null', async () => {
    const key = await newTeamKey('default-limit');
    const made: Row[] = [];
    for (let i = 0; i < 57; i++) made.push(await createLb(key, `default-${String(i).padStart(2, '0')}`));

    const first = await t.api('GET', LBS, undefined, { key });
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(50);
    // Default order: newest first.
    expect(first.body.data.map((r: Row) => r.id)).toEqual(
      sorted(made, 'created_at', 'desc')
        .slice(0, 50)
        .map((r) => r.id),
    );
    expect(first.body.meta.next_cursor).toEqual(expect.any(String));

    const last = await t.api('GET', `${LBS}?cursor=${encodeURIComponent(first.body.meta.next_cursor)}`, undefined, { key });
    expect(last.status).toBe(200);
    expect(last.body.data).toHaveLength(7);
    expect(last.body.meta.next_cursor).toBeNull();
    const all = [...first.body.data, ...last.body.data].map((r: Row) => r.id);
    expect(new Set(all)).toEqual(new Set(made.map((r) => r.id)));
  });

  it('answers next_cursor null when the last page is exactly full, and on an empty list', async () => {
    const key = await newTeamKey('exact-pages');
    const empty = await t.api('GET', LBS, undefined, { key });
    expect(empty.body).toMatchObject({ data: [], meta: { next_cursor: null, persistence: 'synced' } });
    for (let i = 0; i < 14; i++) await createLb(key, `exact-${i}`);
    const seen = await walk(key, 'name', 'asc', 7);
    expect(seen).toHaveLength(14);
    const pageOfAll = await t.api('GET', `${LBS}?limit=14`, undefined, { key });
    expect(pageOfAll.body.data).toHaveLength(14);
    expect(pageOfAll.body.meta.next_cursor).toBeNull();
  });
});

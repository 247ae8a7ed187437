/**
 * Webhook deliveries shared fairly (docs/api.md "Fair sharing"). A team once pointed 100
 * subscriptions at a receiver that accepts connections and never answers: 2,007 sockets
 * were open at once, the process ran out of file descriptors, and another team's writes
 * failed. Here such a receiver (a real HTTP server on loopback) counts, on its own side,
 * the connections and requests the service holds open to it, with small caps so that a
 * few subscriptions reach them:
 * - one team's attempts never exceed the per-team cap, one subscription's never its cap,
 *   all of them never the global cap; another team's delivery arrives meanwhile, and so
 *   does the same team's delivery to a live receiver;
 * - once the receiver answers, every delivery queued behind the caps is made, on its
 *   first attempt (waiting for a place is not an attempt), as the records count.
 * The attempt timeout is long, so nothing times out while the receiver holds them.
 * Deliveries waiting for a place are pending records in the store, so a restart resumes
 * them like any other (the last test).
 */
import { startTestService, TestService, eventually, ApiResponse, tempDataDir } from '../helpers/service';
import { BlackHole, receiversOfThisFile, startBlackHole } from '../helpers/receiver';

const CAPS = { global: 10, perTeam: 4, perSubscription: 2 };
const WEBHOOK_ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.001',
  CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '120000',
  CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: String(CAPS.global),
  CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM: String(CAPS.perTeam),
  CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(CAPS.perSubscription),
};

type Call = (method: string, path: string, body?: unknown) => Promise<ApiResponse>;

const receiver = receiversOfThisFile();

describe('webhook deliveries bounded and shared fairly', () => {
  let t: TestService;
  let blackHole: BlackHole;
  const teams: Record<'a' | 'b' | 'c' | 'd' | 'e', { id: string; call: Call }> = {} as never;
  /** Deliveries each team's events made, by the subscriptions they went to. */
  const expected = new Map<string, number>();

  async function subscribe(team: { call: Call }, url: string): Promise<string> {
    const res = await team.call('POST', '/api/v1/webhooks', { url, events: ['bucket.created'] });
    expect(res.status).toBe(201);
    return res.body.data.id;
  }

  async function buckets(team: { call: Call }, prefix: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) expect((await team.call('POST', '/api/v1/object-storage', { name: `${prefix}-${i}`, region: 'fra1' })).status).toBe(201);
  }

  async function deliveries(team: { call: Call }, status: string): Promise<any[]> {
    const res = await team.call('GET', `/api/v1/webhook-deliveries?status=${status}&limit=100`);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  /** Waits until `count` of the team's deliveries are recorded pending (its events all turned into deliveries). */
  const pendingReach = (team: { call: Call }, count: number) => eventually(async () => (await deliveries(team, 'pending')).length === count, 30_000, 50);

  const heldOf = (team: { id: string }) => blackHole.held.filter((r) => JSON.parse(r.body).team_id === team.id).length;

  beforeAll(async () => {
    t = await startTestService(WEBHOOK_ENV);
    blackHole = await startBlackHole((request) => [`team:${JSON.parse(request.body).team_id}`, `path:${request.path}`]);
    teams.a = { id: t.teamId, call: (method, path, body) => t.api(method, path, body) };
    for (const name of ['b', 'c', 'd', 'e'] as const) {
      const created = await t.api('POST', '/api/v1/teams', { name: `Team ${name}`, owner_email: `owner@${name}.example` });
      expect(created.status).toBe(201);
      const key = created.body.data.api_key.key as string;
      teams[name] = { id: created.body.data.id, call: (method, path, body) => t.api(method, path, body, { key }) };
    }
  });
  afterAll(async () => {
    // Held attempts end at once rather than at their timeout, so the service stops promptly if a test failed.
    await blackHole?.close();
    await t?.stop();
  });

  it("holds one team's attempts to a dead receiver at the team's cap, while another team's delivery arrives", async () => {
    for (let i = 0; i < 6; i++) await subscribe(teams.a, `${blackHole.url}/a${i}`);
    await buckets(teams.a, 'a', 3);
    expected.set(teams.a.id, 18);
    await pendingReach(teams.a, 18);
    await eventually(async () => heldOf(teams.a) >= CAPS.perTeam, 30_000, 50);

    const live = await receiver();
    await subscribe(teams.b, live.url);
    await buckets(teams.b, 'b', 1);
    await eventually(async () => live.received.length === 1, 30_000, 50);
    expect(JSON.parse(live.received[0].body).team_id).toBe(teams.b.id);

    // Team A's deliveries are all still stuck, and were never more than its share.
    expect(await deliveries(teams.a, 'pending')).toHaveLength(18);
    expect(heldOf(teams.a)).toBe(CAPS.perTeam);
    const { byGroup } = blackHole.peaks();
    expect(byGroup.get(`team:${teams.a.id}`)).toBe(CAPS.perTeam);
    for (let i = 0; i < 6; i++) expect(byGroup.get(`path:/hook/a${i}`) ?? 0).toBeLessThanOrEqual(CAPS.perSubscription);
    // A connection is held by an attempt or idle between attempts (webhooks-connections.test.ts):
    // one that never ends holds its own and no other.
    expect(blackHole.connections().peak).toBeLessThanOrEqual(CAPS.perTeam);
  });

  it("holds one subscription's attempts at its cap, while the team's other subscription is served", async () => {
    await subscribe(teams.c, `${blackHole.url}/c-dead`);
    const live = await receiver();
    await subscribe(teams.c, live.url);
    await buckets(teams.c, 'c', 5);
    expected.set(teams.c.id, 10);
    await eventually(async () => (await deliveries(teams.c, 'succeeded')).length === 5, 30_000, 50);
    expect(new Set(live.received.map((r) => r.headers['webhook-id'])).size).toBe(5);
    await eventually(async () => heldOf(teams.c) >= CAPS.perSubscription, 30_000, 50);
    // The dead subscription's five are all still pending, two of them under way.
    expect(await deliveries(teams.c, 'pending')).toHaveLength(5);
    expect(blackHole.peaks().byGroup.get('path:/hook/c-dead')).toBe(CAPS.perSubscription);
  });

  it('never holds more than the global cap, however many teams queue', async () => {
    for (const [name, team] of [
      ['d', teams.d],
      ['e', teams.e],
    ] as const) {
      for (let i = 0; i < 6; i++) await subscribe(team, `${blackHole.url}/${name}${i}`);
      await buckets(team, name, 3);
      expected.set(team.id, 18);
      await pendingReach(team, 18);
    }
    // A holds 4 and C 2; D and E ask for 4 each, and only 4 places are left.
    await eventually(async () => blackHole.held.length >= CAPS.global, 30_000, 50);
    const metrics = await eventually(
      async () => {
        const text = (await t.api('GET', '/metrics', undefined, { key: null })).body as string;
        return /^cloudplane_webhook_attempts_waiting 49$/m.test(text) ? text : null;
      },
      30_000,
      50,
    );
    expect(metrics).toMatch(/^cloudplane_webhook_attempts_in_flight 10$/m);
    expect(blackHole.held.length).toBe(CAPS.global);
    expect(heldOf(teams.d) + heldOf(teams.e)).toBe(CAPS.global - CAPS.perTeam - CAPS.perSubscription);
    const { total, byGroup } = blackHole.peaks();
    expect(total).toBe(CAPS.global);
    for (const team of Object.values(teams)) expect(byGroup.get(`team:${team.id}`) ?? 0).toBeLessThanOrEqual(CAPS.perTeam);
    expect(blackHole.connections().peak).toBeLessThanOrEqual(CAPS.global);
  });

  it('makes every queued delivery once the receiver answers, each on its first attempt', async () => {
    // Answers held 20 ms, so the attempts under way while the queue drains show as held too.
    blackHole.recover(20);
    for (const [name, team] of Object.entries(teams)) {
      const made = await eventually(
        async () => {
          const succeeded = await deliveries(team, 'succeeded');
          return succeeded.length === (expected.get(team.id) ?? 1) ? succeeded : null;
        },
        60_000,
        100,
      );
      expect({ name, pending: (await deliveries(team, 'pending')).length, failed: (await deliveries(team, 'failed')).length }).toEqual({
        name,
        pending: 0,
        failed: 0,
      });
      expect(made.every((d) => d.attempt === '1/15')).toBe(true);
    }
    // Each of the 18 + 5 + 18 + 18 deliveries to the dead receiver reached it once.
    const ids = blackHole.answered.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(59);
    expect(new Set(ids).size).toBe(59);
    // Throughout, including while the queue drained, never more requests at once than the caps allow.
    const { total, byGroup } = blackHole.peaks();
    expect(total).toBeLessThanOrEqual(CAPS.global);
    const overCap = [...byGroup].filter(([group, peak]) => peak > (group.startsWith('team:') ? CAPS.perTeam : CAPS.perSubscription));
    expect(overCap).toEqual([]);
    // Every connection is closed once its attempt ended.
    await eventually(async () => blackHole.connections().open === 0);
  });
});

describe('deliveries waiting for a place, across a restart', () => {
  it('are all made after the restart, once the receiver answers', async () => {
    // One attempt at a time, each given up after 2 s, so the service stops promptly with
    // an attempt under way (it waits for it) and five deliveries waiting behind it.
    const env = {
      ...WEBHOOK_ENV,
      CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '2000',
      CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT: '1',
      CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_TEAM: '1',
      CLOUDPLANE_WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: '1',
    };
    const dataDir = tempDataDir();
    const hole = await startBlackHole();
    let t = await startTestService(env, dataDir);
    const listed = async (status: string) => (await t.api('GET', `/api/v1/webhook-deliveries?status=${status}&limit=100`)).body.data as any[];
    try {
      expect((await t.api('POST', '/api/v1/webhooks', { url: hole.url, events: ['bucket.created'] })).status).toBe(201);
      for (let i = 0; i < 6; i++) expect((await t.api('POST', '/api/v1/object-storage', { name: `restart-${i}`, region: 'fra1' })).status).toBe(201);
      await eventually(async () => (await listed('pending')).length === 6, 30_000, 50);
      await eventually(async () => hole.held.length >= 1, 30_000, 50);
      await t.stop();
      expect(hole.peaks().total).toBe(1);

      t = await startTestService({ ...env, CLOUDPLANE_BOOTSTRAP_API_KEY: t.key }, dataDir);
      hole.recover();
      await eventually(async () => (await listed('succeeded')).length === 6, 30_000, 50);
      expect(await listed('pending')).toHaveLength(0);
      expect(await listed('failed')).toHaveLength(0);
      expect(new Set(hole.answered.map((r) => r.headers['webhook-id'])).size).toBe(6);
      expect(hole.peaks().total).toBe(1);
    } finally {
      await hole.close();
      await t.stop();
    }
  });
});

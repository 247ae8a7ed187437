/**
 * Teams share the reconcilers in fair turns (lib/team-turns.ts): a burst of one
 * team's creates does not hold up another team's single create behind all of it. The
 * test asserts on order, not time: when team B's one load balancer is running, most of
 * team A's burst, created just before it, is not running yet.
 */
import { clusterMode } from '../helpers/cluster';
import { ApiResponse, eventually, startTestService, TestService } from '../helpers/service';

const LBS = '/api/v1/load-balancers';
const BURST = 300;

// On the embedded store only. The turns are the work queue's, the same on both stores
// (test/unit/work-queue.test.ts); on the Kubernetes store each create also claims its
// quota place in the team's ledger, one swap at a time (docs/api.md, Quotas), so a burst
// arrives slower than the reconcilers drain it and there is no backlog to measure.
const describeOnEmbedded = clusterMode() ? describe.skip : describe;

describeOnEmbedded('fair sharing of the reconcilers between teams', () => {
  let t: TestService;
  beforeAll(async () => {
    // The burst's 300 creates go out at once, each on its own connection from 127.0.0.1:
    // what is measured here is the reconcilers' turns, so the per-address connection cap
    // (64, tested in connections.test.ts) is lifted, as the rate limit is. One worker per
    // controller and a provider without delay make each load balancer one pass that writes
    // it running, one after the other: the burst is a backlog of 300 writes in a row, where
    // the API's creates share disk flushes.
    t = await startTestService({
      CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
      CLOUDPLANE_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
      CLOUDPLANE_SIM_DELAY_MS: '0',
      CLOUDPLANE_WORKERS: '1',
    });
  });
  afterAll(async () => t.stop());

  it("runs team B's one create before team A's burst of creates made just before it has drained", async () => {
    const made = await t.api('POST', '/api/v1/teams', { name: 'Team B', owner_email: 'owner@b.example' });
    expect(made.status).toBe(201);
    const teamB = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key: made.body.data.api_key.key });

    const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => t.api('POST', LBS, { name: `burst-${i}`, region: 'fra1' })));
    expect(burst.map((res) => res.status)).toEqual(Array(BURST).fill(201));
    const single = await teamB('POST', LBS, { name: 'single', region: 'fra1' });
    expect(single.status).toBe(201);

    await eventually(async () => (await teamB('GET', `${LBS}/${single.body.data.id}`)).body.data.status === 'running', 60_000, 5);
    const notRunning = await countNotRunning();
    // In one first-in-first-out queue B's create waited behind every pass of A's burst.
    expect(notRunning).toBeGreaterThan(BURST / 2);

    // And A's burst does drain: no team is starved either.
    await eventually(async () => (await countNotRunning()) === 0, 120_000, 200);
  });

  /** How many of team A's load balancers are not running, read page by page. */
  async function countNotRunning(): Promise<number> {
    let count = 0;
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await t.api('GET', `${LBS}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      count += (page.body.data as Array<{ status: string }>).filter((lb) => lb.status !== 'running').length;
      cursor = page.body.meta.next_cursor;
    } while (cursor);
    return count;
  }
});

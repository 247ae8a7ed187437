/**
 * Rare and impossible schedules cost the service next to nothing: a member of one team
 * creates jobs on 29 February and sends schedules for 30 February while the controller
 * resyncs every second, and the event loop stays free for another team. When the next time
 * was found by walking the wall clock, each such job held the loop for most of a second on
 * every resync, and each refused schedule for one to two and a half seconds.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ApiResponse, eventually, startTestService, TestService } from '../helpers/service';

/**
 * Far above a calendar computation's cost and a loaded machine's stalls (up to 410 ms seen
 * on a 2-core CI machine running other suites), below the walk's (see above: a second or
 * more per refused schedule).
 */
const MAX_EVENT_LOOP_DELAY_MS = 900;
const RARE = '0 0 29 2 *';
const IMPOSSIBLE = '* * * 30 2 *';

type Call = (method: string, path: string, body?: unknown) => Promise<ApiResponse>;

/** The next 29 February at midnight UTC after now. */
function nextLeapDay(): string {
  for (let year = new Date().getUTCFullYear(); ; year++) {
    const leapDay = Date.UTC(year, 1, 29);
    if (new Date(leapDay).getUTCMonth() === 1 && leapDay > Date.now()) return new Date(leapDay).toISOString();
  }
}

describe('scheduled jobs on rare or impossible days', () => {
  let t: TestService;
  let attacker: Call;
  let bystander: Call;

  beforeAll(async () => {
    t = await startTestService({
      // Every scheduled job is looked at again each second.
      CLOUDPLANE_RESYNC_SECONDS: '1',
      // Load shedding on, as in production: a blocked loop turns other teams away with 503.
      CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '1000',
      CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000',
    });
    const as =
      (key: string): Call =>
      (method, path, body) =>
        t.api(method, path, body, { key });
    bystander = as(t.key);
    const team = await bystander('POST', '/api/v1/teams', { name: 'Leap', owner_email: 'owner@leap.example' });
    expect(team.status).toBe(201);
    const owner = as(team.body.data.api_key.key);
    const invited = await owner('POST', '/api/v1/settings/team/members', { email: 'member@leap.example', role: 'member' });
    expect(invited.status).toBe(201);
    const key = await owner('POST', '/api/v1/settings/api-keys', { name: 'member key', user_id: invited.body.data.id });
    expect(key.status).toBe(201);
    attacker = as(key.body.data.key);
    // Each route's first call compiles its schemas: done before the loop is watched.
    expect((await attacker('POST', '/api/v1/jobs', { name: 'warm', command: 'true', schedule: '@daily' })).status).toBe(201);
    expect((await attacker('POST', '/api/v1/jobs', { name: 'warm', command: 'true', schedule: '61 * * * *' })).status).toBe(422);
    expect((await attacker('GET', '/api/v1/jobs?limit=10')).status).toBe(200);
  });
  afterAll(async () => t.stop());

  it('keeps the event loop free while they are created, refused and resynced', async () => {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    let watching = true;
    const bystanderStatuses: number[] = [];
    const watch = (async () => {
      while (watching) bystanderStatuses.push((await bystander('GET', '/api/v1/jobs?limit=10')).status);
    })();
    try {
      const created = await Promise.all([1, 2, 3, 4, 5].map((n) => attacker('POST', '/api/v1/jobs', { name: `leap-${n}`, command: 'true', schedule: RARE })));
      expect(created.map((res) => res.status)).toEqual([201, 201, 201, 201, 201]);
      const refused = await Promise.all(
        [1, 2, 3, 4].map((n) => attacker('POST', '/api/v1/jobs', { name: `never-${n}`, command: 'true', schedule: IMPOSSIBLE, timezone: 'Europe/Berlin' })),
      );
      for (const res of refused) {
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('validation_failed');
        expect(res.body.error.details).toEqual([{ field: 'schedule', message: expect.stringMatching(/never fires/) }]);
      }
      // The controller found each job's next time, then looked at them again on a few resyncs.
      const leapDay = nextLeapDay();
      await eventually(async () => {
        const shown = await Promise.all(created.map((res) => attacker('GET', `/api/v1/jobs/${res.body.data.id}`)));
        return shown.every((res) => res.body.data.next_run_at === leapDay);
      }, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 3_500));
    } finally {
      watching = false;
      await watch;
      delay.disable();
    }
    expect(bystanderStatuses.length).toBeGreaterThan(0);
    expect(bystanderStatuses.filter((status) => status !== 200)).toEqual([]);
    expect(delay.max / 1e6).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);
  });
});

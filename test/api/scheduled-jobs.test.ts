import { startTestService, TestService, eventually, tempDataDir } from '../helpers/service';
import { startReceiver, eventsOf, inCreatedOrder, Receiver } from '../helpers/receiver';

// The tests poll runs every 25 ms while per-second schedules fire: on a loaded machine a
// file's polling passed the default 1,000 requests a minute, and a 429 read as a missing job.
const POLLING_ENV = { CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000' };
const WEBHOOK_ENV = { ...POLLING_ENV, CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('scheduled jobs', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestService(WEBHOOK_ENV);
    receiver = await startReceiver();
    const subscribed = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['job.*'] });
    expect(subscribed.status).toBe(201);
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  const runsOf = async (id: string): Promise<any[]> => {
    const res = await t.api('GET', `/api/v1/jobs/${id}/runs?limit=100`);
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const receivedFor = (id: string) => inCreatedOrder(eventsOf(receiver).filter((e) => e.data.id === id));

  it('runs on a per-second schedule, each run a job of its own with the lifecycle and events of one', async () => {
    const created = await t.api('POST', '/api/v1/jobs', { name: 'tick', command: 'echo tick', schedule: '* * * * * *' });
    expect(created.status).toBe(201);
    const job = created.body.data;
    expect(job).toMatchObject({ status: 'scheduled', schedule: '* * * * * *', timezone: 'UTC', scheduled_job_id: null, scheduled_at: null });

    const done = await eventually(async () => {
      const finished = (await runsOf(job.id)).filter((r) => r.status === 'completed');
      return finished.length >= 2 ? finished : null;
    }, 20_000);
    for (const run of done) {
      expect(run).toMatchObject({ scheduled_job_id: job.id, command: 'echo tick', name: 'tick', schedule: null, exit_code: 0 });
      expect(run.id).not.toBe(job.id);
      expect(run.scheduled_at).toMatch(/:\d\d\.000Z$/);
      // Each run is reachable under its job and as a job.
      // updated_at may move on after the end (the outbox relay's write, in cluster mode).
      const same = { ...run, updated_at: expect.any(String) };
      expect((await t.api('GET', `/api/v1/jobs/${job.id}/runs/${run.id}`)).body.data).toEqual(same);
      expect((await t.api('GET', `/api/v1/jobs/${run.id}`)).body.data).toEqual(same);
      const types = await eventually(async () => {
        const seen = receivedFor(run.id).map((e) => e.type);
        return seen.includes('job.completed') ? seen : null;
      });
      expect(types).toEqual(['job.queued', 'job.running', 'job.completed']);
      expect(receivedFor(run.id)[0].data).toMatchObject({ scheduled_job_id: job.id, scheduled_at: run.scheduled_at });
    }
    expect(new Set(done.map((r) => r.scheduled_at)).size).toBe(done.length);

    const shown = (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data;
    expect(Date.parse(shown.next_run_at)).toBeGreaterThan(Date.parse(shown.last_run_at));
    await eventually(async () => receivedFor(job.id).some((e) => e.type === 'job.scheduled'));

    // Cancelling a scheduled job ends its schedule; runs already made go on.
    const cancelled = await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    const after = await eventually(async () => {
      const current = (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data;
      return current.status === 'cancelled' && current.next_run_at === null ? current : null;
    });
    const runsAtCancel = await runsOf(job.id);
    await sleep(2_500);
    const runsLater = await runsOf(job.id);
    // At most one run whose time came while the cancel was being written.
    expect(runsLater.length).toBeLessThanOrEqual(runsAtCancel.length + 1);
    expect(runsLater.every((r) => r.scheduled_at <= after.updated_at)).toBe(true);
    await eventually(async () => receivedFor(job.id).some((e) => e.type === 'job.cancelled'));
  });

  it('reads the schedule in its time zone', async () => {
    const res = await t.api('POST', '/api/v1/jobs', { name: 'morning', command: 'true', schedule: '0 9 * * *', timezone: 'Asia/Kolkata' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'scheduled', timezone: 'Asia/Kolkata' });
    // 09:00 in Kolkata (UTC+05:30) is 03:30 UTC: in the create's own answer already.
    expect(res.body.data.next_run_at).toMatch(/T03:30:00\.000Z$/);
    const shown = (await t.api('GET', `/api/v1/jobs/${res.body.data.id}`)).body.data;
    expect(shown.next_run_at).toBe(res.body.data.next_run_at);
    expect(Date.parse(shown.next_run_at) - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect(await runsOf(shown.id)).toEqual([]);
    await t.api('POST', `/api/v1/jobs/${shown.id}/cancel`);
  });

  it('shows a job without a schedule as its own single run', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'once', command: 'true' })).body.data;
    expect(job).toMatchObject({ status: 'queued', schedule: null, timezone: null, next_run_at: null });
    const runs = await runsOf(job.id);
    expect(runs.map((r) => r.id)).toEqual([job.id]);
    expect((await t.api('GET', `/api/v1/jobs/${job.id}/runs/${job.id}`)).status).toBe(200);
  });

  it('refuses a malformed schedule or time zone, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ schedule: '* * *' }, 'schedule', /expected 5 fields/],
      [{ schedule: '61 * * * *' }, 'schedule', /minute 61/],
      [{ schedule: '0 0 30 2 *' }, 'schedule', /never fires/],
      [{ schedule: '@daily', timezone: 'Mars/Olympus' }, 'timezone', /not an IANA time zone/],
      [{ timezone: 'UTC' }, 'timezone', /needs a schedule/],
      [{ concurrency_policy: 'forbid' }, 'concurrency_policy', /needs a schedule/],
    ];
    for (const [extra, field, message] of cases) {
      const res = await t.api('POST', '/api/v1/jobs', { name: 'bad', command: 'true', ...extra });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details).toEqual([{ field, message: expect.stringMatching(message) }]);
    }
  });

  it('pauses and resumes a schedule, without catching up the paused times', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'pausable', command: 'true', schedule: '* * * * * *' })).body.data;
    await eventually(async () => (await runsOf(job.id)).length > 0);
    const paused = await t.api('POST', `/api/v1/jobs/${job.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ status: 'paused', next_run_at: null });
    expect((await t.api('POST', `/api/v1/jobs/${job.id}/pause`)).body.data.status).toBe('paused');
    await sleep(2_500);
    const whilePaused = await runsOf(job.id);
    await sleep(1_500);
    // A run whose time came while the pause was being written may exist; none after.
    expect((await runsOf(job.id)).map((r) => r.id)).toEqual(whilePaused.map((r) => r.id));

    const resumeAsked = Date.now();
    const resumed = await t.api('POST', `/api/v1/jobs/${job.id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.data.status).toBe('scheduled');
    const fresh = await eventually(async () => {
      const made = (await runsOf(job.id)).filter((r) => !whilePaused.some((p) => p.id === r.id));
      return made.length > 0 ? made : null;
    });
    for (const run of fresh) expect(Date.parse(run.scheduled_at)).toBeGreaterThan(resumeAsked - 1_000);
    const types = await eventually(async () => {
      const seen = receivedFor(job.id).map((e) => e.type);
      return seen.filter((type) => type === 'job.scheduled').length >= 2 ? seen : null;
    });
    expect(types).toEqual(['job.scheduled', 'job.paused', 'job.scheduled']);

    await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    const refused = await t.api('POST', `/api/v1/jobs/${job.id}/resume`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state');
    const once = (await t.api('POST', '/api/v1/jobs', { name: 'once-only', command: 'true' })).body.data;
    expect((await t.api('POST', `/api/v1/jobs/${once.id}/pause`)).body.error.code).toBe('invalid_state');
  });

  it('lets runs overlap under allow (the default)', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'overlapping', command: 'sleep 3', schedule: '* * * * * *' })).body.data;
    expect(job.concurrency_policy).toBe('allow');
    await eventually(async () => (await runsOf(job.id)).filter((r) => r.status === 'running').length >= 2, 15_000);
    await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
  });

  it('skips a time while a run is going under forbid', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'exclusive', command: 'sleep 2', schedule: '* * * * * *', concurrency_policy: 'forbid' })).body
      .data;
    expect(job.concurrency_policy).toBe('forbid');
    const runs = await eventually(async () => {
      const all = await runsOf(job.id);
      return all.filter((r) => r.status === 'completed').length >= 2 ? all : null;
    }, 20_000);
    await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    const ordered = [...runs].sort((a, b) => a.scheduled_at.localeCompare(b.scheduled_at));
    for (let i = 1; i < ordered.length; i++) {
      // Each run was made only once the one before had finished.
      expect(ordered[i - 1].finished_at).not.toBeNull();
      expect(Date.parse(ordered[i].created_at)).toBeGreaterThanOrEqual(Date.parse(ordered[i - 1].finished_at));
    }
  });

  it('cancels the running run for the next under replace', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'latest-wins', command: 'sleep 60', schedule: '*/2 * * * * *', concurrency_policy: 'replace' }))
      .body.data;
    const runs = await eventually(async () => {
      const all = (await runsOf(job.id)).sort((a, b) => a.scheduled_at.localeCompare(b.scheduled_at));
      return all.length >= 3 && all.slice(0, -1).every((r) => r.status === 'cancelled') ? all : null;
    }, 20_000);
    await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    for (const run of runs.slice(0, -1)) expect(run.status_reason).toBe('Cancelled on request.');
    for (const run of await runsOf(job.id)) if (run.status !== 'cancelled') await t.api('POST', `/api/v1/jobs/${run.id}/cancel`);
  });

  it("shows a run's output, live and once it ended", async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'talker', command: 'echo hello; echo "from cron" && sleep 1', schedule: '* * * * * *' })).body
      .data;
    const run = await eventually(async () => (await runsOf(job.id)).find((r) => r.status === 'completed'), 20_000);
    await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    const logs = await t.api('GET', `/api/v1/jobs/${job.id}/logs?run_id=${run.id}`);
    expect(logs.status).toBe(200);
    expect(logs.body.data).toEqual({ job_id: job.id, run_id: run.id, status: 'completed', output: 'hello\nfrom cron\n' });
    // Without run_id: the latest run.
    const latest = (await runsOf(job.id)).sort((a, b) => b.scheduled_at.localeCompare(a.scheduled_at))[0];
    expect((await t.api('GET', `/api/v1/jobs/${job.id}/logs`)).body.data.run_id).toBe(latest.id);

    const once = (await t.api('POST', '/api/v1/jobs', { name: 'printer', command: 'echo once && sleep 3' })).body.data;
    const live = await eventually(async () => {
      const body = (await t.api('GET', `/api/v1/jobs/${once.id}/logs`)).body.data;
      return body.status === 'running' ? body : null;
    });
    expect(live).toEqual({ job_id: once.id, run_id: once.id, status: 'running', output: 'once\n' });
    await eventually(async () => (await t.api('GET', `/api/v1/jobs/${once.id}`)).body.data.status === 'completed', 15_000);
    expect((await t.api('GET', `/api/v1/jobs/${once.id}/logs`)).body.data).toMatchObject({ status: 'completed', output: 'once\n' });

    expect((await t.api('GET', `/api/v1/jobs/${job.id}/logs?run_id=${once.id}`)).body.error.code).toBe('run_not_found');
    const idle = (await t.api('POST', '/api/v1/jobs', { name: 'idle', command: 'true', schedule: '@yearly' })).body.data;
    expect((await t.api('GET', `/api/v1/jobs/${idle.id}/logs`)).body.error.code).toBe('run_not_found');
    await t.api('POST', `/api/v1/jobs/${idle.id}/cancel`);
  });

  it('answers 404 for a run of another job', async () => {
    const a = (await t.api('POST', '/api/v1/jobs', { name: 'first', command: 'true' })).body.data;
    const b = (await t.api('POST', '/api/v1/jobs', { name: 'second', command: 'true' })).body.data;
    const res = await t.api('GET', `/api/v1/jobs/${a.id}/runs/${b.id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('run_not_found');
    expect((await t.api('GET', '/api/v1/jobs/job_0000000000000000/runs')).body.error.code).toBe('job_not_found');
  });
});

describe('scheduled jobs across a restart', () => {
  it('starts one run for the times missed while the service was down, the latest of them', async () => {
    const dataDir = tempDataDir();
    let t = await startTestService(POLLING_ENV, dataDir);
    const key = t.key;
    // Two times a few seconds ahead, as the seconds of every minute: both fall while the service is down.
    const now = Date.now();
    const first = new Date(Math.ceil(now / 1000) * 1000 + 6_000);
    const second = new Date(first.getTime() + 2_000);
    const schedule = `${first.getUTCSeconds()},${second.getUTCSeconds()} * * * * *`;
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'nightly', command: 'true', schedule })).body.data;
    expect(job.status).toBe('scheduled');
    await t.stop();
    expect(Date.now()).toBeLessThan(first.getTime()); // else the service was not down at the first time
    await sleep(second.getTime() + 1_000 - Date.now());

    t = await startTestService({ ...POLLING_ENV, CLOUDPLANE_BOOTSTRAP_API_KEY: key }, dataDir);
    try {
      const runs = await eventually(async () => {
        const found = (await t.api('GET', `/api/v1/jobs/${job.id}/runs`)).body.data;
        return found.length > 0 && found.every((r: any) => r.status === 'completed') ? found : null;
      }, 20_000);
      expect(runs.map((r: any) => r.scheduled_at)).toEqual([second.toISOString()]);
      const shown = (await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data;
      expect(shown.last_run_at).toBe(second.toISOString());
      // The next time is a minute on: no other run is due before it.
      expect(Date.parse(shown.next_run_at)).toBe(first.getTime() + 60_000);
    } finally {
      await t.stop();
    }
  });
});

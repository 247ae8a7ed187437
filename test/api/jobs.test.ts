import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';

describe('jobs', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  const typesOf = async (id: string) => (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === id).map((e) => e.type);

  it('runs queued -> running -> completed with an exit code and times', async () => {
    const created = await t.api('POST', '/api/v1/jobs', { name: 'migrate', command: 'sleep 0.5 && echo done' });
    expect(created.status).toBe(201);
    const job = created.body.data;
    expect(job).toMatchObject({
      status: 'queued',
      image: 'docker.io/library/alpine:3.20',
      region: 'fra1',
      plan: 'standard',
      exit_code: null,
      started_at: null,
      finished_at: null,
    });
    expect(job.id).toMatch(/^job_/);
    const done = await waitForStatus(t, `/api/v1/jobs/${job.id}`, 'completed');
    expect(done.exit_code).toBe(0);
    expect(Date.parse(done.finished_at)).toBeGreaterThan(Date.parse(done.started_at));
    const types = await eventually(async () => {
      const all = await typesOf(job.id);
      return all.includes('job.completed') ? all : null;
    });
    expect(types).toEqual(['job.queued', 'job.running', 'job.completed']);
    const cancel = await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    expect(cancel.status).toBe(409);
    expect(cancel.body.error.code).toBe('invalid_state');
  });

  it('fails with the exit code of the command', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'broken', command: 'false; exit 3' })).body.data;
    const failed = await waitForStatus(t, `/api/v1/jobs/${job.id}`, 'failed');
    expect(failed).toMatchObject({ exit_code: 3, status_reason: 'the command exited with code 3' });
    await eventually(async () => (await typesOf(job.id)).includes('job.failed'));
  });

  it('cancels a running job and keeps it as history', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'long', command: 'sleep 30', plan: 'performance', region: 'sgp1' })).body.data;
    await waitForStatus(t, `/api/v1/jobs/${job.id}`, 'running');
    const cancelled = await t.api('POST', `/api/v1/jobs/${job.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 300));
    expect((await t.api('GET', `/api/v1/jobs/${job.id}`)).body.data.status).toBe('cancelled');
    expect((await t.api('POST', `/api/v1/jobs/${job.id}/cancel`)).body.error.code).toBe('invalid_state');
    const types = await eventually(async () => {
      const all = await typesOf(job.id);
      return all.includes('job.cancelled') ? all : null;
    });
    expect(types).toEqual(['job.queued', 'job.running', 'job.cancelled']);
    // Jobs are cancelled, never deleted or changed: the path takes GET only.
    for (const res of [await t.api('DELETE', `/api/v1/jobs/${job.id}`), await t.api('PATCH', `/api/v1/jobs/${job.id}`, { name: 'x' })]) {
      expect(res.status).toBe(405);
      expect(res.body.error.code).toBe('method_not_allowed');
      expect(res.headers.get('allow')).toBe('GET, HEAD');
    }
  });

  it('validates the body', async () => {
    const res = await t.api('POST', '/api/v1/jobs', { name: 'no-command', plan: 'quantum' });
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: any) => d.field).sort()).toEqual(['command', 'plan']);
    expect((await t.api('POST', '/api/v1/jobs', { name: 'r', command: 'true', region: 'mars1' })).status).toBe(422);
    expect((await t.api('GET', '/api/v1/jobs/job_0000000000000000')).body.error.code).toBe('job_not_found');
  });
});

/**
 * meta.provider is the health of the driver behind the family, as it last saw its work:
 * failed operations of one family's driver degrade that family's answers and no other's.
 * A failure of a team's own making (a command that exits non-zero) is that resource's,
 * shown on it, and never the provider's: one team's failing job degrades no one's answers.
 */
import { startTestService, TestService, waitForStatus } from '../helpers/service';

describe('meta.provider from the driver', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_SIM_FAILURES: 'load_balancer=1' });
  });
  afterAll(async () => t?.stop());

  it('is connected before anything failed, degraded once a driver operation failed, for that family only', async () => {
    const before = await t.api('GET', '/api/v1/load-balancers');
    expect(before.body.meta.provider).toBe('connected');
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'doomed', region: 'fra1' })).body.data;
    const failed = await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'failed');
    expect(failed.status_reason).toMatch(/^Provisioning failed: the provider ran out of capacity/);
    expect((await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.meta.provider).toBe('degraded');
    expect((await t.api('GET', '/api/v1/servers')).body.meta.provider).toBe('connected');
  });

  it("keeps the job family connected for every team when a team's command exits non-zero, which the job shows", async () => {
    const created = await t.api('POST', '/api/v1/teams', { name: 'Bystanders', owner_email: 'owner@bystanders.example' });
    expect(created.status).toBe(201);
    const other = created.body.data.api_key.key as string;
    const failing = (await t.api('POST', '/api/v1/jobs', { name: 'exits-3', command: 'false; exit 3' })).body.data;
    const failed = await waitForStatus(t, `/api/v1/jobs/${failing.id}`, 'failed');
    expect(failed).toMatchObject({ exit_code: 3, status_reason: 'the command exited with code 3' });
    // The owner's answers about the failed job and its others, and another team's, all say connected.
    expect((await t.api('GET', `/api/v1/jobs/${failing.id}`)).body.meta.provider).toBe('connected');
    expect((await t.api('GET', '/api/v1/jobs')).body.meta.provider).toBe('connected');
    const bystander = await t.api('GET', '/api/v1/jobs', undefined, { key: other });
    expect(bystander.status).toBe(200);
    expect(bystander.body.meta.provider).toBe('connected');
    const theirs = (await t.api('POST', '/api/v1/jobs', { name: 'fine', command: 'echo ok' }, { key: other })).body.data;
    expect((await waitForStatus({ api: (m, p) => t.api(m, p, undefined, { key: other }) }, `/api/v1/jobs/${theirs.id}`, 'completed')).exit_code).toBe(0);
    expect((await t.api('GET', `/api/v1/jobs/${theirs.id}`, undefined, { key: other })).body.meta.provider).toBe('connected');
  });
});

describe('meta.provider when the job runner itself fails', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_SIM_FAILURES: 'job=1' });
  });
  afterAll(async () => t?.stop());

  it('degrades the job family, and only it', async () => {
    const job = (await t.api('POST', '/api/v1/jobs', { name: 'unlucky', command: 'echo hi' })).body.data;
    const failed = await waitForStatus(t, `/api/v1/jobs/${job.id}`, 'failed');
    expect(failed.status_reason).toMatch(/simulated failure injected/);
    expect((await t.api('GET', '/api/v1/jobs')).body.meta.provider).toBe('degraded');
    expect((await t.api('GET', '/api/v1/servers')).body.meta.provider).toBe('connected');
  });
});

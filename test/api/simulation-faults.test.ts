/**
 * The simulation API (docs/api.md, "The simulation API"): with CLOUDPLANE_SIMULATION_API=true a team asks
 * the simulated drivers to fail or slow its next operations, and its resources show it as
 * they would a real provider's failure. Runs on both stores (the faults are kept in the
 * store's records, a ConfigMap in cluster mode), with the servers' simulated driver.
 */
import { startTestService, TestService, waitForStatus } from '../helpers/service';
import { clusterMode } from '../helpers/cluster';
import { createTeam } from '../../src/accounts/bootstrap';

jest.setTimeout(90_000);

const FAULTS = '/api/v1/simulation/faults';
const SERVER = { region: 'fra1' };

let t: TestService;
beforeAll(async () => {
  t = await startTestService({
    CLOUDPLANE_SIMULATION_API: 'true',
    CLOUDPLANE_DRIVER_SERVER: 'simulated',
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
    // In cluster mode the load balancers run HAProxy, which no fault can reach.
    ...(clusterMode() ? { CLOUDPLANE_DRIVER_LOAD_BALANCER: 'kubernetes' } : {}),
  });
});
afterAll(async () => t?.stop());
afterEach(async () => {
  expect((await t.api('DELETE', FAULTS)).status).toBe(204);
});

const createServer = async (name: string, key?: string) => {
  const res = await t.api('POST', '/api/v1/servers', { ...SERVER, name }, key ? { key } : {});
  expect(res.status).toBe(201);
  return res.body.data.id as string;
};

describe('faults of the simulated drivers', () => {
  it('fails the next provisioning with the error asked, once, and lists the fault until it is used up', async () => {
    const asked = await t.api('POST', FAULTS, { family: 'server', operation: 'provision', error: 'the rack caught fire' });
    expect(asked.status).toBe(201);
    expect(asked.body.data).toMatchObject({ family: 'server', operation: 'provision', remaining: 1, error: 'the rack caught fire', delay_ms: null });
    expect(asked.headers.get('location')).toBe(`${FAULTS}/${asked.body.data.id}`);
    expect((await t.api('GET', FAULTS)).body.data.map((f: any) => f.id)).toEqual([asked.body.data.id]);

    const broken = await createServer('broken');
    const failed = await waitForStatus(t, `/api/v1/servers/${broken}`, 'failed', 30_000);
    expect(failed.status_reason).toContain('the rack caught fire');
    expect((await t.api('GET', FAULTS)).body.data).toEqual([]);

    const fine = await createServer('fine');
    await waitForStatus(t, `/api/v1/servers/${fine}`, 'running', 30_000);
  });

  it('reaches `count` operations, then none', async () => {
    await t.api('POST', FAULTS, { family: 'server', error: 'no capacity left', count: 2 });
    const ids = [await createServer('first'), await createServer('second')];
    for (const id of ids) expect((await waitForStatus(t, `/api/v1/servers/${id}`, 'failed', 30_000)).status_reason).toContain('no capacity left');
    const third = await createServer('third');
    await waitForStatus(t, `/api/v1/servers/${third}`, 'running', 30_000);
  });

  it('makes an operation take the time asked: a stop that lasts ten minutes is still stopping long after its usual time', async () => {
    const id = await createServer('slow-stop');
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 30_000);
    await t.api('POST', FAULTS, { family: 'server', operation: 'power_off', delay_ms: 600_000 });
    expect((await t.api('POST', `/api/v1/servers/${id}/stop`)).status).toBeLessThan(300);
    await waitForStatus(t, `/api/v1/servers/${id}`, 'stopping', 30_000);
    // The simulated stop takes about 25 ms here (CLOUDPLANE_SIM_DELAY_MS 50, halved): the fault's ten minutes hold it.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await t.api('GET', `/api/v1/servers/${id}`)).body.data.status).toBe('stopping');
    expect((await t.api('GET', FAULTS)).body.data).toEqual([]);
  });

  it("fails a backup's snapshot: the backup is failed with the error", async () => {
    const id = await createServer('backed-up');
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 30_000);
    await t.api('POST', FAULTS, { family: 'backup', operation: 'snapshot', error: 'the snapshot store is full' });
    const backup = (await t.api('POST', `/api/v1/servers/${id}/backups`, { name: 'doomed' })).body.data.id;
    const failed = await waitForStatus(t, `/api/v1/servers/${id}/backups/${backup}`, 'failed', 30_000);
    expect(JSON.stringify(failed)).toContain('the snapshot store is full');
  });

  it("reaches the asking team's resources only, and shows a team its own faults only", async () => {
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Neighbour', ownerName: 'N', ownerEmail: 'n@example.com' });
    await t.api('POST', FAULTS, { family: 'server', error: 'only ours', count: 5 });
    expect((await t.api('GET', FAULTS, undefined, { key: other.token })).body.data).toEqual([]);
    const theirs = await createServer('theirs', other.token);
    const asThem: Pick<TestService, 'api'> = { api: (method, path, body, options) => t.api(method, path, body, { ...options, key: other.token }) };
    await waitForStatus(asThem, `/api/v1/servers/${theirs}`, 'running', 30_000);
    expect((await t.api('GET', FAULTS)).body.data[0].remaining).toBe(5);
  });
});

describe('what the simulation API refuses', () => {
  it.each([
    [{ family: 'tape_drive', error: 'x' }, 'family'],
    [{ family: 'server', operation: 'snapshot', error: 'x' }, 'operation'],
    [{ family: 'server' }, 'error'],
    [{ family: 'server', operation: 'release', error: 'x' }, 'error'],
    [{ family: 'server', error: 'x', count: 0 }, 'count'],
    [{ family: 'server', delay_ms: -1 }, 'delay_ms'],
    [{ family: 'job', error: 'x' }, 'family'],
  ])('refuses %j with 422 naming %s', async (body, field) => {
    const res = await t.api('POST', FAULTS, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(JSON.stringify(res.body.error.details)).toContain(field);
  });

  it('lets a release be slowed', async () => {
    expect((await t.api('POST', FAULTS, { family: 'server', operation: 'release', delay_ms: 1000 })).status).toBe(201);
  });

  it('takes reads from a read_only key and refuses it changes', async () => {
    const reader = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'fault-reader', scope: 'read_only' })).body.data.key;
    expect((await t.api('GET', FAULTS, undefined, { key: reader })).status).toBe(200);
    expect((await t.api('POST', FAULTS, { family: 'server', error: 'x' }, { key: reader })).status).toBe(403);
    expect((await t.api('DELETE', FAULTS, undefined, { key: reader })).status).toBe(403);
  });

  it('removes one fault by id, 404 once gone; at most 100 wait per team', async () => {
    const one = (await t.api('POST', FAULTS, { family: 'server', error: 'x' })).body.data.id;
    expect((await t.api('DELETE', `${FAULTS}/${one}`)).status).toBe(204);
    const gone = await t.api('DELETE', `${FAULTS}/${one}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('fault_not_found');
    for (let i = 0; i < 100; i++) expect((await t.api('POST', FAULTS, { family: 'server', delay_ms: i })).status).toBe(201);
    const over = await t.api('POST', FAULTS, { family: 'server', delay_ms: 1 });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('quota_exceeded');
    expect((await t.api('GET', FAULTS)).body.data).toHaveLength(100);
  });

  (clusterMode() ? it : it.skip)('refuses a family whose driver here is not the simulated one', async () => {
    const res = await t.api('POST', FAULTS, { family: 'load_balancer', error: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0].message).toContain('simulated drivers only');
  });

  (clusterMode() ? it.skip : it)('is not served unless CLOUDPLANE_SIMULATION_API is true', async () => {
    const off = await startTestService();
    try {
      const res = await off.api('GET', FAULTS);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('route_not_found');
    } finally {
      await off.stop();
    }
  });
});

import { startTestService, TestService, TRANSIENT_ENV, waitForStatus, eventually } from '../helpers/service';

describe('servers', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ ...TRANSIENT_ENV, CLOUDPLANE_SIMULATION_API: 'true' });
  });
  afterAll(async () => t.stop());

  const eventsOf = async (id: string) => (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === id).map((e) => e.type);

  it('runs the general lifecycle: create, stop, start, reboot, delete', async () => {
    const created = await t.api('POST', '/api/v1/servers', { name: 'app-1', region: 'lon1' });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({ status: 'creating', plan: 's-1vcpu-1gb', image: 'ubuntu-24.04', region: 'lon1', ipv4: null });
    expect(id).toMatch(/^svr_/);

    const early = await t.api('POST', `/api/v1/servers/${id}/stop`);
    expect([200, 409]).toContain(early.status);
    if (early.status === 409) expect(early.body.error.code).toBe('resource_busy');

    const running = await waitForStatus(t, `/api/v1/servers/${id}`, 'running');
    expect(running.ipv4).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    const wrong = await t.api('POST', `/api/v1/servers/${id}/start`);
    expect(wrong.status).toBe(409);
    expect(wrong.body.error.code).toBe('invalid_state');

    // The stop takes 5 s (the simulation API's fault), so the DELETE surely finds it stopping, however loaded the machine.
    const slowStop = await t.api('POST', '/api/v1/simulation/faults', { family: 'server', operation: 'power_off', delay_ms: 5000 });
    expect(slowStop.status).toBe(201);
    const stopping = await t.api('POST', `/api/v1/servers/${id}/stop`);
    expect(stopping.status).toBe(200);
    expect(stopping.body.data.status).toBe('stopping');
    const busy = await t.api('DELETE', `/api/v1/servers/${id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('resource_busy');
    await waitForStatus(t, `/api/v1/servers/${id}`, 'stopped', 30_000);

    const noReboot = await t.api('POST', `/api/v1/servers/${id}/reboot`);
    expect(noReboot.status).toBe(409);
    expect(noReboot.body.error.code).toBe('invalid_state');

    expect((await t.api('POST', `/api/v1/servers/${id}/start`)).body.data.status).toBe('starting');
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running');
    expect((await t.api('POST', `/api/v1/servers/${id}/reboot`)).body.data.status).toBe('rebooting');
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running');

    const renamed = await t.api('PATCH', `/api/v1/servers/${id}`, { name: 'app-one' });
    expect(renamed.body.data.name).toBe('app-one');
    await eventually(async () => (await eventsOf(id)).includes('server.updated'));

    const deleted = await t.api('DELETE', `/api/v1/servers/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    expect((await t.api('POST', `/api/v1/servers/${id}/stop`)).body.error.code).toBe('invalid_state');

    const types = await eventually(async () => {
      const all = await eventsOf(id);
      return all.includes('server.deleted') ? all : null;
    });
    expect(types).toEqual(['server.created', 'server.running', 'server.stopped', 'server.running', 'server.running', 'server.updated', 'server.deleted']);
  });

  it('destroys a deleted server after the retention period and frees its id', async () => {
    const short = await startTestService({ CLOUDPLANE_DELETED_RETENTION_SECONDS: '0' });
    try {
      const id = (await short.api('POST', '/api/v1/servers', { name: 'temp', region: 'fra1' })).body.data.id;
      await waitForStatus(short, `/api/v1/servers/${id}`, 'running');
      await short.api('DELETE', `/api/v1/servers/${id}`);
      await eventually(async () => (await short.api('GET', `/api/v1/servers/${id}`)).status === 404);
      const types = await eventually(async () => {
        const all = (await short.service.ctx.bus.recent(short.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === id).map((e) => e.type);
        return all.includes('server.destroyed') ? all : null;
      });
      expect(types).toEqual(['server.created', 'server.running', 'server.deleted', 'server.destroyed']);
      expect((await short.api('GET', `/api/v1/servers/${id}`)).body.error.code).toBe('server_not_found');
    } finally {
      await short.stop();
    }
  });

  it('ends in failed with a reason when the provider fails, and reports provider health', async () => {
    const failing = await startTestService({ CLOUDPLANE_SIM_FAILURES: 'server=1' });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await failing.api('POST', '/api/v1/servers', { name: `f-${i}`, region: 'fra1' })).body.data.id);
      const failed = await waitForStatus(failing, `/api/v1/servers/${ids[0]}`, 'failed');
      expect(failed.status_reason).toMatch(/Provisioning failed: .+/);
      for (const id of ids) await waitForStatus(failing, `/api/v1/servers/${id}`, 'failed');
      const res = await failing.api('GET', '/api/v1/servers');
      expect(res.body.meta.provider).toBe('unavailable');
      expect((await failing.api('POST', `/api/v1/servers/${ids[0]}/start`)).body.error.code).toBe('invalid_state');
      expect((await failing.api('DELETE', `/api/v1/servers/${ids[0]}`)).status).toBe(200);
    } finally {
      await failing.stop();
    }
  });

  it('validates plans and unknown fields', async () => {
    const res = await t.api('POST', '/api/v1/servers', { name: 'x', region: 'fra1', plan: 'huge', colour: 'red' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: any) => d.field).sort()).toEqual(['colour', 'name', 'plan']);
  });
});

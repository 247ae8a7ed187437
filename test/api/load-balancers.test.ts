import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';

describe('load balancers', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it('goes from creating to running with an address, and deletes softly', async () => {
    const created = await t.api('POST', '/api/v1/load-balancers', { name: 'web', region: 'fra1' });
    expect(created.status).toBe(201);
    const lb = created.body.data;
    expect(lb).toMatchObject({
      name: 'web',
      region: 'fra1',
      status: 'creating',
      algorithm: 'round_robin',
      protocol: 'http',
      port: 80,
      health_check_path: '/health',
      sticky_sessions: false,
      backends: [],
      ipv4: null,
    });
    expect(lb.id).toMatch(/^lb_[0-9a-z]{16,26}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/load-balancers/${lb.id}`);
    expect(created.body.meta).toMatchObject({ persistence: 'synced', provider: 'connected' });

    const running = await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'running');
    expect(running.ipv4).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    const deleted = await t.api('DELETE', `/api/v1/load-balancers/${lb.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    const listed = await t.api('GET', '/api/v1/load-balancers?status=deleted');
    expect(listed.body.data.map((x: any) => x.id)).toContain(lb.id);
    const defaultList = await t.api('GET', '/api/v1/load-balancers');
    expect(defaultList.body.data.map((x: any) => x.id)).not.toContain(lb.id);
    const patch = await t.api('PATCH', `/api/v1/load-balancers/${lb.id}`, { algorithm: 'ip_hash' });
    expect(patch.status).toBe(409);
    expect(patch.body.error.code).toBe('invalid_state');
  });

  it('emits created, running and deleted events exactly once', async () => {
    const created = await t.api('POST', '/api/v1/load-balancers', { name: 'events', region: 'ams3' });
    const id = created.body.data.id;
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running');
    await t.api('DELETE', `/api/v1/load-balancers/${id}`);
    const events = await eventually(async () => {
      const all = (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === id);
      return all.length >= 3 ? all : null;
    });
    expect(events.map((e) => e.type)).toEqual(['load_balancer.created', 'load_balancer.running', 'load_balancer.deleted']);
  });
});

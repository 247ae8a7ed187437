import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';
import { createTeam } from '../../src/accounts/bootstrap';

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

  it('answers the traffic counters: zeros on the simulated provider, which passes no traffic, with its backends and their health', async () => {
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'counted', region: 'fra1' })).body.data;
    const server = (await t.api('POST', '/api/v1/servers', { name: 'behind', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'running');
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running');
    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/attach`, { server_id: server.id, port: 8080 })).status).toBe(200);
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.backends[0]?.status === 'healthy', 30_000, 100);

    const before = Date.now();
    const stats = await t.api('GET', `/api/v1/load-balancers/${lb.id}/stats`);
    expect(stats.status).toBe(200);
    expect(stats.body.meta).toMatchObject({ provider: 'connected' });
    expect(stats.body.data).toEqual({
      sessions_total: 0,
      bytes_in: 0,
      bytes_out: 0,
      current_sessions: 0,
      instances: 0,
      observed_at: expect.any(String),
      backends: [{ server_id: server.id, port: 8080, up: true, sessions_total: 0, bytes_in: 0, bytes_out: 0, current_sessions: 0 }],
    });
    // Read now, not taken from the record.
    expect(Date.parse(stats.body.data.observed_at)).toBeGreaterThanOrEqual(before - 1_000);

    // A read: a viewer's key and a read-only key may make it.
    const member = await t.api('POST', '/api/v1/settings/team/members', { email: 'viewer@lb-stats.example', role: 'viewer' });
    const viewerKey = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'viewer', user_id: member.body.data.id })).body.data.key;
    const readOnlyKey = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'reader', scope: 'read_only' })).body.data.key;
    for (const key of [viewerKey, readOnlyKey]) {
      const res = await t.api('GET', `/api/v1/load-balancers/${lb.id}/stats`, undefined, { key });
      expect([res.status, res.body.data?.backends?.length]).toEqual([200, 1]);
    }

    // Another team's load balancer is not found, as any of its records; so is one that does not exist.
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@lb-stats.example' });
    const theirs = await t.api('GET', `/api/v1/load-balancers/${lb.id}/stats`, undefined, { key: other.token });
    expect([theirs.status, theirs.body.error?.code]).toEqual([404, 'load_balancer_not_found']);
    const missing = await t.api('GET', '/api/v1/load-balancers/lb_0000000000000000/stats');
    expect([missing.status, missing.body.error?.code]).toEqual([404, 'load_balancer_not_found']);
    expect((await t.api('GET', `/api/v1/load-balancers/${lb.id}/stats`, undefined, { key: null })).status).toBe(401);
  });
});

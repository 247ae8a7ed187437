import { startTestService, TestService, TRANSIENT_ENV, waitForStatus, eventually } from '../helpers/service';

const valid = { name: 'office', region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };

describe('VPN gateways', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(TRANSIENT_ENV);
  });
  afterAll(async () => t.stop());

  it('goes creating -> active with an address and live tunnel status, then deleting -> deleted (202)', async () => {
    const created = await t.api('POST', '/api/v1/vpn-gateways', { ...valid, pre_shared_key: 'a-very-secret-key-1234' });
    expect(created.status).toBe(201);
    const gw = created.body.data;
    expect(gw).toMatchObject({ status: 'creating', tunnel_type: 'ipsec', local_network_cidr: '10.10.0.0/16', remote_network_cidr: '192.168.10.0/24', local_ip: null, public_key: null });
    expect(gw.id).toMatch(/^vpn_[0-9a-z]{16,26}$/);
    expect(JSON.stringify(created.body)).not.toContain('a-very-secret-key-1234');
    expect(created.body.meta).toMatchObject({ persistence: 'synced', provider: 'connected' });

    const busy = await t.api('PATCH', `/api/v1/vpn-gateways/${gw.id}`, { name: 'renamed' });
    expect([200, 409]).toContain(busy.status);
    if (busy.status === 409) expect(busy.body.error.code).toBe('resource_busy');

    const active = await waitForStatus(t, `/api/v1/vpn-gateways/${gw.id}`, 'active');
    expect(active.local_ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(active.tunnel_status).toBe('up');

    const first = await t.api('GET', `/api/v1/vpn-gateways/${gw.id}/status`);
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ tunnel_status: 'up', bytes_sent: expect.any(Number), bytes_received: expect.any(Number), last_handshake: expect.any(String) });
    expect(first.body.meta.provider).toBe('connected');
    await new Promise((r) => setTimeout(r, 1100));
    const second = await t.api('GET', `/api/v1/vpn-gateways/${gw.id}/status`);
    expect(second.body.data.bytes_sent).toBeGreaterThan(first.body.data.bytes_sent);

    const deleting = await t.api('DELETE', `/api/v1/vpn-gateways/${gw.id}`);
    expect(deleting.status).toBe(202);
    expect(deleting.body.data.status).toBe('deleting');
    const again = await t.api('DELETE', `/api/v1/vpn-gateways/${gw.id}`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('resource_busy');
    await waitForStatus(t, `/api/v1/vpn-gateways/${gw.id}`, 'deleted');
    const events = await eventually(async () => {
      const all = (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === gw.id);
      return all.length >= 4 ? all : null;
    });
    expect(events.map((e) => e.type)).toEqual(['vpn_gateway.created', 'vpn_gateway.active', 'vpn_gateway.deleting', 'vpn_gateway.deleted']);
    expect(JSON.stringify(events)).not.toContain('a-very-secret-key-1234');
  });

  it('keeps the pre-shared key in a secret, generates one for IPsec, and rotates it with an update event', async () => {
    const ipsec = (await t.api('POST', '/api/v1/vpn-gateways', valid)).body.data;
    const secret = await t.service.ctx.store.getSecret(t.teamId, `vpn-psk-${ipsec.id}`);
    expect(secret?.value).toMatch(/^[A-Za-z0-9]{40}$/);
    const wg = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'wg', tunnel_type: 'wireguard' })).body.data;
    expect(await t.service.ctx.store.getSecret(t.teamId, `vpn-psk-${wg.id}`)).toBeUndefined();
    const wgActive = await waitForStatus(t, `/api/v1/vpn-gateways/${wg.id}`, 'active');
    expect(wgActive.public_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);

    await waitForStatus(t, `/api/v1/vpn-gateways/${ipsec.id}`, 'active');
    const rotated = await t.api('PATCH', `/api/v1/vpn-gateways/${ipsec.id}`, { pre_shared_key: 'rotated-key-abcdefgh' });
    expect(rotated.status).toBe(200);
    expect(JSON.stringify(rotated.body)).not.toContain('rotated-key');
    expect((await t.service.ctx.store.getSecret(t.teamId, `vpn-psk-${ipsec.id}`))?.value).toBe('rotated-key-abcdefgh');
    await eventually(async () => (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).some((e) => e.type === 'vpn_gateway.updated' && e.data.id === ipsec.id));

    const renamed = await t.api('PATCH', `/api/v1/vpn-gateways/${ipsec.id}`, { name: 'hq', remote_network_cidr: '172.20.0.0/16' });
    expect(renamed.body.data).toMatchObject({ name: 'hq', remote_network_cidr: '172.20.0.0/16' });
  });

  it.each([
    [{ tunnel_type: 'openvpn' }, 'invalid_tunnel_type', 'tunnel_type'],
    [{ remote_network_cidr: '192.168.10.1/24' }, 'invalid_cidr', 'remote_network_cidr'],
    [{ remote_network_cidr: '10.10.4.0/24' }, 'invalid_cidr', 'remote_network_cidr'],
    [{ local_network_cidr: 'banana' }, 'invalid_cidr', 'local_network_cidr'],
    [{ remote_peer_ip: '10.0.0.1' }, 'invalid_peer_ip', 'remote_peer_ip'],
    [{ remote_peer_ip: '127.0.0.1' }, 'invalid_peer_ip', 'remote_peer_ip'],
    [{ remote_peer_ip: '169.254.169.254' }, 'invalid_peer_ip', 'remote_peer_ip'],
    [{ remote_peer_ip: '224.0.0.5' }, 'invalid_peer_ip', 'remote_peer_ip'],
    [{ remote_peer_ip: 'not-an-ip' }, 'invalid_peer_ip', 'remote_peer_ip'],
    [{ pre_shared_key: 'short' }, 'validation_failed', 'pre_shared_key'],
    [{ region: 'mars1' }, 'region_unavailable', 'region'],
  ])('refuses %j with %s', async (change, code, field) => {
    const res = await t.api('POST', '/api/v1/vpn-gateways', { ...valid, ...change });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.details?.map((d: any) => d.field)).toContain(field);
    expect(res.body.meta.provider).toBeDefined();
  });

  it('leaves an active gateway at rest: growing counters do not make it rewrite itself', async () => {
    // Each status write brings a reconcile; counters that grow with every look used to be
    // written on each, a loop that starved the API's own writes (DELETE answered 500).
    const gw = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'quiet' })).body.data;
    await waitForStatus(t, `/api/v1/vpn-gateways/${gw.id}`, 'active');
    const settled = await eventually(async () => {
      const stored = await t.service.ctx.store.get<unknown, { pending_events: unknown[] }>('VpnGateway', t.teamId, gw.id);
      return stored && stored.status.pending_events.length === 0 ? stored : null;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const later = await t.service.ctx.store.get('VpnGateway', t.teamId, gw.id);
    expect(later?.meta.resourceVersion).toBe(settled.meta.resourceVersion);
    const live = await t.api('GET', `/api/v1/vpn-gateways/${gw.id}/status`);
    expect(live.body.data.bytes_sent).toBeGreaterThan(0);
  });

  it('refuses non-updatable fields and unknown ids', async () => {
    const gw = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'patchme' })).body.data;
    await waitForStatus(t, `/api/v1/vpn-gateways/${gw.id}`, 'active');
    const res = await t.api('PATCH', `/api/v1/vpn-gateways/${gw.id}`, { region: 'ams3' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    const missing = await t.api('GET', '/api/v1/vpn-gateways/vpn_0000000000000000/status');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('vpn_gateway_not_found');
  });
});

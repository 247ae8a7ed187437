import { generateKeyPairSync } from 'node:crypto';
import { startTestService, TestService, TRANSIENT_ENV, waitForStatus, eventually } from '../helpers/service';
import { findIn } from '../helpers/secret-scan';

/** A WireGuard public key as `wg pubkey` prints it: the raw X25519 key in base64. */
const wireguardPublicKey = () => generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');

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
    expect(gw).toMatchObject({
      status: 'creating',
      tunnel_type: 'ipsec',
      local_network_cidr: '10.10.0.0/16',
      remote_network_cidr: '192.168.10.0/24',
      local_ip: null,
      public_key: null,
    });
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
    expect(first.body.data).toEqual({
      tunnel_status: 'up',
      bytes_sent: expect.any(Number),
      bytes_received: expect.any(Number),
      last_handshake: expect.any(String),
    });
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
    const secret = await t.service.ctx.store.secrets.get(t.teamId, `vpn-psk-${ipsec.id}`);
    expect(secret?.value).toMatch(/^[A-Za-z0-9]{40}$/);
    const wg = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'wg', tunnel_type: 'wireguard' })).body.data;
    expect(await t.service.ctx.store.secrets.get(t.teamId, `vpn-psk-${wg.id}`)).toBeUndefined();
    const wgActive = await waitForStatus(t, `/api/v1/vpn-gateways/${wg.id}`, 'active');
    expect(wgActive.public_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);

    await waitForStatus(t, `/api/v1/vpn-gateways/${ipsec.id}`, 'active');
    const rotated = await t.api('PATCH', `/api/v1/vpn-gateways/${ipsec.id}`, { pre_shared_key: 'rotated-key-abcdefgh' });
    expect(rotated.status).toBe(200);
    expect(JSON.stringify(rotated.body)).not.toContain('rotated-key');
    expect((await t.service.ctx.store.secrets.get(t.teamId, `vpn-psk-${ipsec.id}`))?.value).toBe('rotated-key-abcdefgh');
    await eventually(async () =>
      (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).some((e) => e.type === 'vpn_gateway.updated' && e.data.id === ipsec.id),
    );

    const renamed = await t.api('PATCH', `/api/v1/vpn-gateways/${ipsec.id}`, { name: 'hq', remote_network_cidr: '172.20.0.0/16' });
    expect(renamed.body.data).toMatchObject({ name: 'hq', remote_network_cidr: '172.20.0.0/16' });

    // The reconciler hands the key to the driver; what the driver records keeps none of it.
    await eventually(async () => {
      const stored = await t.service.ctx.store.get<unknown, { observed_generation?: number }>('VpnGateway', t.teamId, ipsec.id);
      return stored && stored.status.observed_generation === stored.meta.generation ? stored : null;
    });
    const stored = await t.service.ctx.store.get('VpnGateway', t.teamId, ipsec.id);
    expect(findIn('the stored gateway', Buffer.from(JSON.stringify(stored)), [{ label: 'rotated pre-shared key', value: 'rotated-key-abcdefgh' }])).toEqual([]);
  });

  it("takes a WireGuard peer's public key at create and by PATCH, and applies it", async () => {
    const peerKey = wireguardPublicKey();
    const created = await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'wg-peer', tunnel_type: 'wireguard', remote_public_key: peerKey });
    expect(created.status).toBe(201);
    expect(created.body.data.remote_public_key).toBe(peerKey);
    const bare = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'wg-bare', tunnel_type: 'wireguard' })).body.data;
    expect(bare.remote_public_key).toBeNull();
    expect((await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'ipsec-bare' })).body.data.remote_public_key).toBeNull();

    await waitForStatus(t, `/api/v1/vpn-gateways/${bare.id}`, 'active');
    const given = wireguardPublicKey();
    const patched = await t.api('PATCH', `/api/v1/vpn-gateways/${bare.id}`, { remote_public_key: given });
    expect(patched.status).toBe(200);
    expect(patched.body.data.remote_public_key).toBe(given);
    // A new peer key is a configuration change: the driver applies it, and the change is announced.
    await eventually(async () => {
      const stored = await t.service.ctx.store.get<unknown, { observed_generation?: number }>('VpnGateway', t.teamId, bare.id);
      return stored && stored.meta.generation > 1 && stored.status.observed_generation === stored.meta.generation;
    });
    await eventually(async () =>
      (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).some((e) => e.type === 'vpn_gateway.updated' && e.data.id === bare.id),
    );
    const cleared = await t.api('PATCH', `/api/v1/vpn-gateways/${bare.id}`, { remote_public_key: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.remote_public_key).toBeNull();
  });

  it.each([
    ['on an IPsec gateway', { tunnel_type: 'ipsec' }],
    ['that is not base64', { tunnel_type: 'wireguard', remote_public_key: `${'!'.repeat(43)}=` }],
    ['of 31 bytes', { tunnel_type: 'wireguard', remote_public_key: Buffer.alloc(31, 7).toString('base64') }],
    ['that is too short', { tunnel_type: 'wireguard', remote_public_key: Buffer.alloc(16, 1).toString('base64') }],
  ])('refuses remote_public_key %s with 422 validation_failed', async (_case, change) => {
    const body = { ...valid, name: 'bad-key', remote_public_key: wireguardPublicKey(), ...change };
    const res = await t.api('POST', '/api/v1/vpn-gateways', body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details?.map((d: any) => d.field)).toContain('remote_public_key');
  });

  it('refuses remote_public_key in a PATCH of an IPsec gateway', async () => {
    const gw = (await t.api('POST', '/api/v1/vpn-gateways', { ...valid, name: 'ipsec-patch' })).body.data;
    await waitForStatus(t, `/api/v1/vpn-gateways/${gw.id}`, 'active');
    const res = await t.api('PATCH', `/api/v1/vpn-gateways/${gw.id}`, { remote_public_key: wireguardPublicKey() });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details?.map((d: any) => d.field)).toContain('remote_public_key');
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
      const stored = await t.service.ctx.store.get('VpnGateway', t.teamId, gw.id);
      return stored && t.service.ctx.writer.relayed(stored) ? stored : null;
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

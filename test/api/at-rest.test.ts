/**
 * Resources that have reached a steady state stay at rest: no reconciler keeps rewriting
 * them. Each status write brings a reconcile through the watch, so a reconciler that writes
 * something new on every look (a growing counter, a timestamp) loops without pause, burns
 * the API server and etcd in cluster mode, and starves the API's own writes.
 */
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { Receiver, startReceiver } from '../helpers/receiver';

describe('resources at rest', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    t = await startTestService({ CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  it('writes nothing once every family is steady', async () => {
    const created: Array<{ kind: string; path: string; id: string; steady: string }> = [];
    const make = async (kind: string, path: string, body: object, steady: string) => {
      const res = await t.api('POST', path, body);
      expect(res.status).toBe(201);
      created.push({ kind, path, id: res.body.data.id, steady });
      return res.body.data.id as string;
    };
    const hook = (await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['server.*', 'bucket.*'] })).body.data;
    const server = await make('Server', '/api/v1/servers', { name: 'app', region: 'fra1' }, 'running');
    const lb = await make('LoadBalancer', '/api/v1/load-balancers', { name: 'web', region: 'fra1' }, 'running');
    await make(
      'VpnGateway',
      '/api/v1/vpn-gateways',
      { name: 'office', region: 'fra1', tunnel_type: 'wireguard', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' },
      'active',
    );
    await make('Bucket', '/api/v1/object-storage', { name: 'at-rest-assets', region: 'fra1' }, 'available');
    await make('FileShare', '/api/v1/file-storage', { name: 'home', region: 'fra1' }, 'available');
    await make('CloudJob', '/api/v1/jobs', { name: 'once', command: 'true' }, 'completed');
    for (const { path, id, steady } of created) await waitForStatus(t, `${path}/${id}`, steady);
    expect((await t.api('POST', `/api/v1/load-balancers/${lb}/attach`, { server_id: server, port: 8080 })).status).toBe(200);
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${lb}`)).body.data.backends?.[0]?.status === 'healthy');

    // Deliveries succeed and are recorded: a kind of their own that must come to rest too.
    const deliveryIds = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
      const done = res.body.data.filter((d: { status: string }) => d.status === 'succeeded');
      return done.length >= 3 && done.length === res.body.data.length ? done.map((d: { id: string }) => d.id) : null;
    });
    created.push({ kind: 'WebhookSubscription', path: '/api/v1/webhooks', id: hook.id, steady: 'active' });
    for (const id of deliveryIds) created.push({ kind: 'WebhookDelivery', path: '', id, steady: 'succeeded' });

    // Settled: every event relayed.
    const store = t.service.ctx.store;
    await eventually(async () => {
      for (const { kind, id } of created) {
        const stored = await store.get(kind, t.teamId, id);
        if (!stored || !t.service.ctx.writer.relayed(stored)) return false;
      }
      return true;
    });

    const writes: string[] = [];
    const ids = new Set(created.map((c) => c.id));
    const unwatch = store.watch((event) => {
      if (ids.has(event.object.meta.id)) writes.push(`${event.type} ${event.object.meta.kind} ${event.object.meta.id}`);
    });
    try {
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      unwatch();
    }
    expect(writes).toEqual([]);
  });
});

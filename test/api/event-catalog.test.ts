/**
 * The event catalog (src/events/catalog.ts, GET /api/v1/event-types): it holds every type
 * the service emits, found by driving each family through its lifecycle and reading the
 * audit log, and every emitted `data` is valid by its schema; subscriptions may name only
 * what it holds; and docs/api.md lists exactly its types.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { clusterFor, clusterMode, kubeConfigOf } from '../helpers/cluster';
import { eventCatalog, familyEventTypes } from '../../src/events/catalog';
import { families } from '../../src/resources/registry';
import { newId } from '../../src/lib/ids';
import type { Webhook } from '../../src/resources/webhook';
import { ConflictError } from '../../src/store/types';

const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // Deleted resources are destroyed a second later, so `.destroyed` is emitted too.
  CLOUDPLANE_DELETED_RETENTION_SECONDS: '1',
};
const HOOK = 'https://example.com/hook';
const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };

/**
 * Types the lifecycle drive does not cause: failures (the next test causes them on a
 * service whose provider fails), a VPN gateway's destruction (its deletion takes longer),
 * the auto-disable and kubectl-only edits of API keys, a webhook's failed delivery and
 * ping (test/api/webhooks-receivers.test.ts causes both), data.*: only the bucket
 * driver `s3` emits them, from its endpoint's notifications (test/api/s3-data-events.test.ts),
 * usage thresholds, which need limits set and crossed (test/api/usage.test.ts drives
 * both to a receiver), a failed backup (it needs a running server under a provider
 * whose backups fail: test/api/backups.test.ts), and a degraded Kubernetes cluster (a change
 * its provider refused: test/api/kubernetes-clusters.test.ts).
 */
const ALERTS_DRIVEN_ELSEWHERE = [
  'alert.created',
  'alert.updated',
  'alert.triggered',
  'alert.resolved',
  'alert.deleted',
  'incident.opened',
  'incident.acknowledged',
  'incident.resolved',
];
/** (Alert policies and incidents need a condition to fire over time: test/api/alerts.test.ts drives each of their types to a receiver.) */
const NOT_DRIVEN = [
  ...ALERTS_DRIVEN_ELSEWHERE,
  'load_balancer.failed',
  'vpn_gateway.failed',
  'server.failed',
  'bucket.failed',
  'file_share.failed',
  'database.failed',
  'kubernetes_cluster.failed',
  'kubernetes_cluster.degraded',
  'vpn_gateway.destroyed',
  'api_key.updated',
  'webhook.disabled',
  'webhook.delivery_failed',
  'webhook.ping',
  'data.created',
  'data.updated',
  'data.destroyed',
  'usage.threshold_reached',
  'usage.overage',
  'backup.failed',
];

interface AuditEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

/** Events whose `data` the schema of their catalog entry refuses, with ajv's reasons. */
function invalidData(events: AuditEvent[]): string[] {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
  const validators = new Map<string, ValidateFunction>();
  const problems: string[] = [];
  for (const event of events) {
    const entry = eventCatalog().find((e) => e.type === event.type);
    if (!entry) continue;
    if (!validators.has(entry.category)) validators.set(entry.category, ajv.compile(JSON.parse(JSON.stringify(entry.data_schema))));
    const validate = validators.get(entry.category)!;
    if (!validate(event.data)) problems.push(`${event.type} ${event.id}: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

describe('event catalog', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(ENV);
  });
  afterAll(async () => t.stop());

  const created = async (url: string, body: unknown): Promise<string> => {
    const res = await t.api('POST', url, body);
    expect(res.status).toBe(201);
    return res.body.data.id;
  };
  const ok = async (method: string, url: string, body?: unknown) => {
    const res = await t.api(method, url, body);
    expect([res.status, res.body?.error]).toEqual([expect.any(Number), undefined]);
    expect(res.status).toBeLessThan(300);
    return res.body?.data;
  };
  /** Waits for the event of a change, so that the next step (a delete) does not overtake it. */
  const sawEvent = (resourceId: string, type: string) =>
    eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${resourceId}&type=${type}`)).body.data.length > 0, 30_000);
  const auditLog = async (): Promise<AuditEvent[]> => {
    const events: AuditEvent[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await t.api('GET', `/api/v1/audit-log?limit=100&order=asc${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      events.push(...res.body.data);
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    return events;
  };

  it('lists every type with its category, description and data schema, filtered by category', async () => {
    const res = await t.api('GET', '/api/v1/event-types');
    expect(res.status).toBe(200);
    const entries = res.body.data as { type: string; category: string; description: string; data_schema: any }[];
    expect(entries.map((e) => e.type)).toEqual(eventCatalog().map((e) => e.type));
    for (const entry of entries) {
      expect(entry.type.startsWith(`${entry.category}.`)).toBe(true);
      expect(entry.description.length).toBeGreaterThan(10);
      expect(entry.data_schema).toMatchObject({ type: 'object', properties: expect.any(Object) });
      expect(Object.keys(entry.data_schema.properties).length).toBeGreaterThan(1);
    }
    expect(new Set(entries.map((e) => e.type)).size).toBe(entries.length);
    expect(entries.map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'load_balancer.backend_attached',
        'server.stopped',
        'job.cancelled',
        'api_key.revoked',
        'webhook.disabled',
        'vpn_gateway.deleting',
      ]),
    );
    // Nothing emits these yet, so they are not in the catalog.
    // Every category the spec names is emitted now.
    expect(
      entries
        .filter((e) => e.category === 'usage')
        .map((e) => e.type)
        .sort(),
    ).toEqual(['usage.overage', 'usage.threshold_reached']);
    expect(entries.map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'backup.created',
        'backup.completed',
        'backup.failed',
        'backup.restore_started',
        'backup.restore_completed',
        'alert.triggered',
        'alert.resolved',
        'incident.opened',
        'incident.acknowledged',
        'incident.resolved',
        'data.created',
        'data.updated',
        'data.destroyed',
      ]),
    );

    const servers = await t.api('GET', '/api/v1/event-types?category=server');
    expect(servers.body.data.length).toBeGreaterThan(3);
    expect(servers.body.data.every((e: any) => e.category === 'server')).toBe(true);
    const unknown = await t.api('GET', '/api/v1/event-types?category=disk');
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('validation_failed');
  });

  it('holds every type the service emits, each with data valid by its schema', async () => {
    // Every family through its lifecycle, on this store.
    const server = await created('/api/v1/servers', { name: 'cat-svr', region: 'fra1' });
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running');
    const lb = await created('/api/v1/load-balancers', { name: 'cat-lb', region: 'fra1' });
    await waitForStatus(t, `/api/v1/load-balancers/${lb}`, 'running');
    await ok('POST', `/api/v1/load-balancers/${lb}/attach`, { server_id: server });
    await sawEvent(lb, 'load_balancer.backend_attached');
    await ok('PATCH', `/api/v1/load-balancers/${lb}`, { health_check_path: '/ready' });
    await sawEvent(lb, 'load_balancer.updated');
    await ok('POST', `/api/v1/load-balancers/${lb}/detach`, { server_id: server });
    await sawEvent(lb, 'load_balancer.backend_detached');
    await ok('DELETE', `/api/v1/load-balancers/${lb}`);
    await ok('PATCH', `/api/v1/servers/${server}`, { name: 'cat-svr-2' });
    await sawEvent(server, 'server.updated');
    await ok('POST', `/api/v1/servers/${server}/stop`);
    await waitForStatus(t, `/api/v1/servers/${server}`, 'stopped');
    await ok('POST', `/api/v1/servers/${server}/start`);
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running');
    await ok('POST', `/api/v1/servers/${server}/reboot`);
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running');
    const backup = await created(`/api/v1/servers/${server}/backups`, {});
    await waitForStatus(t, `/api/v1/servers/${server}/backups/${backup}`, 'completed');
    await ok('POST', `/api/v1/servers/${server}/restore`, { backup_id: backup });
    await sawEvent(backup, 'backup.restore_completed');
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running');
    await ok('DELETE', `/api/v1/servers/${server}`);

    const vpn = await created('/api/v1/vpn-gateways', { ...VPN, name: 'cat-vpn' });
    await waitForStatus(t, `/api/v1/vpn-gateways/${vpn}`, 'active');
    await ok('PATCH', `/api/v1/vpn-gateways/${vpn}`, { name: 'cat-vpn-2' });
    await sawEvent(vpn, 'vpn_gateway.updated');
    await eventually(async () => (await t.api('DELETE', `/api/v1/vpn-gateways/${vpn}`)).status === 202);

    const bucket = await created('/api/v1/object-storage', { name: 'cat-bucket', region: 'fra1' });
    await waitForStatus(t, `/api/v1/object-storage/${bucket}`, 'available');
    await ok('PATCH', `/api/v1/object-storage/${bucket}`, { public: true });
    await sawEvent(bucket, 'bucket.updated');
    const share = await created('/api/v1/file-storage', { name: 'cat-share', region: 'fra1' });
    await waitForStatus(t, `/api/v1/file-storage/${share}`, 'available');
    await ok('PATCH', `/api/v1/file-storage/${share}`, { size_gb: 200 });
    await sawEvent(share, 'file_share.updated');
    await eventually(async () => (await t.api('DELETE', `/api/v1/object-storage/${bucket}`)).status < 300);
    await eventually(async () => (await t.api('DELETE', `/api/v1/file-storage/${share}`)).status < 300);
    const database = await created('/api/v1/databases', { name: 'cat-db', region: 'fra1' });
    await waitForStatus(t, `/api/v1/databases/${database}`, 'running');
    await ok('POST', `/api/v1/databases/${database}/reset-password`);
    await sawEvent(database, 'database.updated');
    await eventually(async () => (await t.api('DELETE', `/api/v1/databases/${database}`)).status < 300);
    const cluster = await created('/api/v1/kubernetes-clusters', {
      name: 'cat-k8s',
      region: 'fra1',
      version: '1.33',
      node_pools: [{ name: 'pool', size: 's-1vcpu-2gb', count: 1 }],
    });
    await waitForStatus(t, `/api/v1/kubernetes-clusters/${cluster}`, 'running');
    await ok('POST', `/api/v1/kubernetes-clusters/${cluster}/upgrade`, { version: '1.34' });
    await sawEvent(cluster, 'kubernetes_cluster.upgrading');
    await eventually(async () => (await t.api('GET', `/api/v1/kubernetes-clusters/${cluster}`)).body.data.version === '1.34');
    await waitForStatus(t, `/api/v1/kubernetes-clusters/${cluster}`, 'running');
    await ok('POST', `/api/v1/kubernetes-clusters/${cluster}/kubeconfig/rotate`);
    await sawEvent(cluster, 'kubernetes_cluster.updated');
    await ok('GET', `/api/v1/kubernetes-clusters/${cluster}/kubeconfig`);
    await sawEvent(cluster, 'kubernetes_cluster.kubeconfig_read');
    await eventually(async () => (await t.api('DELETE', `/api/v1/kubernetes-clusters/${cluster}`)).status < 300);

    const done = await created('/api/v1/jobs', { name: 'cat-ok', command: 'echo hi' });
    const broken = await created('/api/v1/jobs', { name: 'cat-broken', command: 'exit 3' });
    const long = await created('/api/v1/jobs', { name: 'cat-long', command: 'sleep 30' });
    await waitForStatus(t, `/api/v1/jobs/${long}`, 'running');
    await ok('POST', `/api/v1/jobs/${long}/cancel`);
    await waitForStatus(t, `/api/v1/jobs/${done}`, 'completed');
    await waitForStatus(t, `/api/v1/jobs/${broken}`, 'failed');
    // A scheduled job (once a year, so no run in the test) is scheduled, then paused.
    const yearly = await created('/api/v1/jobs', { name: 'cat-yearly', command: 'echo hi', schedule: '0 0 1 1 *' });
    await sawEvent(yearly, 'job.scheduled');
    await ok('POST', `/api/v1/jobs/${yearly}/pause`);
    await sawEvent(yearly, 'job.paused');

    await ok('PATCH', '/api/v1/settings/team', { name: 'Catalogued' });
    await ok('PATCH', '/api/v1/settings/profile', { name: 'Cat Alog' });
    const member = await created('/api/v1/settings/team/members', { email: 'cat@example.com', role: 'member' });
    await ok('DELETE', `/api/v1/settings/team/members/${member}`);
    const key = await created('/api/v1/settings/api-keys', { name: 'cat-key' });
    await ok('DELETE', `/api/v1/settings/api-keys/${key}`);
    await created('/api/v1/agent/threads', {});
    const hook = await created('/api/v1/webhooks', { url: HOOK, events: ['server.*'] });
    await ok('PATCH', `/api/v1/webhooks/${hook}`, { events: ['server.running'] });
    await ok('DELETE', `/api/v1/webhooks/${hook}`);

    const wanted = [
      'profile.removed',
      'load_balancer.destroyed',
      'server.destroyed',
      'vpn_gateway.deleted',
      'job.cancelled',
      'job.failed',
      'api_key.revoked',
      'webhook.deleted',
      'bucket.destroyed',
      'file_share.destroyed',
      'database.destroyed',
      'kubernetes_cluster.destroyed',
    ];
    const events = await eventually(async () => {
      const all = await auditLog();
      const types = new Set(all.map((e) => e.type));
      return wanted.every((type) => types.has(type)) && all;
    }, 30_000);

    const catalog = new Map(eventCatalog().map((entry) => [entry.type, entry]));
    const emitted = [...new Set(events.map((e) => e.type))].sort();
    expect(emitted.filter((type) => !catalog.has(type))).toEqual([]);
    // The drive emits every other type: the catalog claims nothing that is not emitted.
    const notDriven = [...catalog.keys()].filter((type) => !emitted.includes(type));
    expect(notDriven.filter((type) => !NOT_DRIVEN.includes(type))).toEqual([]);

    expect(invalidData(events)).toEqual([]);
  });

  it('holds the failures of every driver-backed family, with data valid by its schema', async () => {
    // A second service whose simulated provider fails every provisioning.
    const failing = await startTestService({
      ...ENV,
      CLOUDPLANE_SIM_FAILURES: 'load_balancer=1,vpn_gateway=1,server=1,bucket=1,file_share=1,database=1,kubernetes_cluster=1',
    });
    try {
      const made = await Promise.all([
        failing.api('POST', '/api/v1/load-balancers', { name: 'bad-lb', region: 'fra1' }),
        failing.api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'bad-vpn' }),
        failing.api('POST', '/api/v1/servers', { name: 'bad-svr', region: 'fra1' }),
        failing.api('POST', '/api/v1/object-storage', { name: 'bad-bucket', region: 'fra1' }),
        failing.api('POST', '/api/v1/file-storage', { name: 'bad-share', region: 'fra1' }),
        failing.api('POST', '/api/v1/databases', { name: 'bad-db', region: 'fra1' }),
        failing.api('POST', '/api/v1/kubernetes-clusters', { name: 'bad-k8s', region: 'fra1', node_pools: [{ name: 'pool', size: 's-1vcpu-2gb', count: 1 }] }),
      ]);
      expect(made.map((res) => res.status)).toEqual([201, 201, 201, 201, 201, 201, 201]);
      const failures = [
        'load_balancer.failed',
        'vpn_gateway.failed',
        'server.failed',
        'bucket.failed',
        'file_share.failed',
        'database.failed',
        'kubernetes_cluster.failed',
      ];
      const categoryEvents = async () =>
        (
          await Promise.all(
            failures.map(async (type) => (await failing.api('GET', `/api/v1/audit-log?limit=100&type=${type.split('.')[0]}.*`)).body.data as AuditEvent[]),
          )
        ).flat();
      const events = await eventually(async () => {
        const all = await categoryEvents();
        return failures.every((type) => all.some((e) => e.type === type)) && all;
      }, 30_000);
      expect(failures.filter((type) => !events.some((e) => e.type === type))).toEqual([]);
      const catalog = new Set(eventCatalog().map((entry) => entry.type));
      expect(events.filter((e) => !catalog.has(e.type)).map((e) => e.type)).toEqual([]);
      expect(invalidData(events)).toEqual([]);
    } finally {
      await failing.stop();
    }
  });

  describe('subscriptions name only what the catalog holds', () => {
    const refused = async (method: string, url: string, body: unknown, field: string, message: RegExp) => {
      const res = await t.api(method, url, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details).toEqual(expect.arrayContaining([{ field, message: expect.stringMatching(message) }]));
      return res;
    };

    it('refuses on create a type or pattern outside it, naming the entry', async () => {
      await refused(
        'POST',
        '/api/v1/webhooks',
        { url: HOOK, events: ['server.*', 'server.running', 'disk.created'] },
        'events[2]',
        /`disk.created` is not an event type the service emits/,
      );
      await refused('POST', '/api/v1/webhooks', { url: HOOK, events: ['meteor.*'] }, 'events[0]', /`meteor.\*` matches no event type/);
      await refused('POST', '/api/v1/webhooks', { url: HOOK, events: ['server.exploded'] }, 'events[0]', /not an event type/);
      // Deliveries and agent messages are families that emit nothing.
      await refused('POST', '/api/v1/webhooks', { url: HOOK, events: ['delivery.*'] }, 'events[0]', /matches no event type/);
      const both = await t.api('POST', '/api/v1/webhooks', { url: HOOK, events: ['disk.created', 'job.*', 'meteor.*'] });
      expect(both.body.error.details.map((d: any) => d.field)).toEqual(['events[0]', 'events[2]']);
    });

    it("refuses a filter key that is no field of its category's data", async () => {
      await refused(
        'POST',
        '/api/v1/webhooks',
        { url: HOOK, events: ['server.*'], filter: { 'server.colour': 'blue' } },
        'filter.server.colour',
        /no field of the data of `server` events/,
      );
      await refused(
        'POST',
        '/api/v1/webhooks',
        { url: HOOK, events: ['server.*'], filter: { 'disk.region': 'fra1' } },
        'filter.disk.region',
        /no category of event/,
      );
      const fine = await t.api('POST', '/api/v1/webhooks', {
        url: HOOK,
        events: ['server.*', 'bucket.created'],
        filter: { 'server.region': ['fra1'], 'bucket.name': 'x', 'job.plan': 'standard' },
      });
      expect(fine.status).toBe(201);
    });

    it('refuses the same on update and for a listener', async () => {
      const hook = await created('/api/v1/webhooks', { url: HOOK, events: ['server.*'] });
      await refused('PATCH', `/api/v1/webhooks/${hook}`, { events: ['server.running', 'disk.created'] }, 'events[1]', /not an event type/);
      await refused('PATCH', `/api/v1/webhooks/${hook}`, { filter: { 'server.nope': 'x' } }, 'filter.server.nope', /no field/);
      expect((await t.api('GET', `/api/v1/webhooks/${hook}`)).body.data).toMatchObject({ events: ['server.*'], filter: null });
      expect((await t.api('PATCH', `/api/v1/webhooks/${hook}`, { events: ['webhook.*', 'job.completed'], filter: { 'job.region': 'fra1' } })).status).toBe(200);
      await refused('POST', '/api/v1/webhooks/listeners', { events: ['meteor.struck'] }, 'events[0]', /not an event type/);
      // A listener without events gets every category of the catalog, each of which emits.
      const listener = await t.api('POST', '/api/v1/webhooks/listeners', {});
      expect(listener.status).toBe(201);
      const categories = [...new Set(eventCatalog().map((e) => e.category))];
      expect(listener.body.data.events).toEqual(categories.map((c) => `${c}.*`));
      expect(categories).not.toContain('delivery');
      await t.api('DELETE', `/api/v1/webhooks/${listener.body.data.id}`);
    });

    it('judges a subscription made or edited outside the API by the same rules', async () => {
      const store = t.service.ctx.store;
      const spec = { url: HOOK, events: ['server.*', 'meteor.struck'], filter: null, active: true, rate_limit_per_minute: 100 };
      let id: string;
      if (clusterMode()) {
        // As kubectl apply makes it: a custom resource without a status in the team's namespace.
        const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
        const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'webhooksubscriptions' };
        await custom.createNamespacedCustomObject({
          ...where,
          body: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'WebhookSubscription', metadata: { name: 'made-with-kubectl' }, spec },
        });
        id = await eventually(
          async () => ((await custom.getNamespacedCustomObject({ ...where, name: 'made-with-kubectl' })) as any).metadata.labels?.['cloudplane.dev/id'],
        );
      } else {
        // The embedded store's equivalent: a resource written without a status.
        id = newId('wh');
        await store.create({ meta: { kind: 'WebhookSubscription', id, team: t.teamId }, spec, status: {} });
      }
      const failed = await waitForStatus(t, `/api/v1/webhooks/${id}`, 'failed', 30_000);
      expect(failed.disabled_reason).toMatch(/events\[1\] `meteor.struck` is not an event type the service emits/);

      // As kubectl edit does: the latest version, again if the service wrote in between.
      const edit = (change: Partial<Webhook['spec']>, when: (latest: Webhook) => boolean = () => true) =>
        eventually(async () => {
          const latest = (await store.get('WebhookSubscription', t.teamId, id)) as Webhook;
          if (!when(latest)) return false;
          try {
            await store.update({ ...latest, spec: { ...latest.spec, ...change } });
            return true;
          } catch (err) {
            if (err instanceof ConflictError) return false;
            throw err;
          }
        });

      // Fixing the manifest adopts it.
      await edit({ events: ['server.*'] });
      await waitForStatus(t, `/api/v1/webhooks/${id}`, 'active', 30_000);

      // An edit of an accepted one that breaks the rules ends it failed, with the reason.
      await edit({ filter: { 'server.colour': 'blue' } }, (latest) => latest.status.observed_generation >= latest.meta.generation);
      const refusedEdit = await waitForStatus(t, `/api/v1/webhooks/${id}`, 'failed', 30_000);
      expect(refusedEdit.disabled_reason).toMatch(/filter.server.colour names `colour`, which is no field of the data of `server` events/);
      await edit({ filter: { 'server.region': 'fra1' } });
      expect(await waitForStatus(t, `/api/v1/webhooks/${id}`, 'active', 30_000)).toMatchObject({ filter: { 'server.region': 'fra1' } });
    });
  });

  it('is the list of docs/api.md, which cannot drift from it', () => {
    const docs = readFileSync(path.join(__dirname, '../../docs/api.md'), 'utf8');
    const section = docs.split(/^## /m).find((s) => s.startsWith('Event catalog'));
    expect(section).toBeDefined();
    const rows = [...section!.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \| (.+) \|$/gm)].map(([, type, description]) => ({ type, description }));
    expect(rows).toEqual(eventCatalog().map(({ type, description }) => ({ type, description })));
  });

  it("takes each family's types from the family: creation, reported states and declared verbs", () => {
    for (const family of families) {
      const types = eventCatalog()
        .filter((e) => e.category === family.name)
        .map((e) => e.type);
      for (const verb of Object.keys(family.eventVerbs ?? {})) expect(types).toContain(`${family.name}.${verb}`);
      if (family.creationEvent) expect(types).toContain(`${family.name}.${family.creationEvent}`);
      // A family's state changes carry its record; standalone events (a webhook's failed delivery, its ping) their own data.
      for (const entry of familyEventTypes(family)) expect(eventCatalog().find((e) => e.type === entry.type)?.data_schema).toBe(family.schemas.record);
    }
  });
});

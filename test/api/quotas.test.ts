import { CustomObjectsApi } from '@kubernetes/client-node';
import { startTestService, TestService, eventually, waitForStatus, tempDataDir } from '../helpers/service';
import { clusterFor, clusterMode, kubeConfigOf } from '../helpers/cluster';
import { loadConfig } from '../../src/config';
import { quotaLimits } from '../../src/resources/quota';
import { startService } from '../../src/service';
import { createLogger } from '../../src/logger';
import { families } from '../../src/resources/registry';
import { newId } from '../../src/lib/ids';

const QUOTAS = {
  load_balancer: 2,
  vpn_gateway: 1,
  server: 1,
  bucket: 2,
  file_share: 1,
  database: 1,
  kubernetes_cluster: 1,
  job: 1,
  webhook: 2,
  api_key: 2,
  thread: 1,
  alert: 1,
  message: 3,
  webhook_listener: 1,
};
/** Quotas of what one create does not make one of (an exchange writes two messages; a listener is a webhook too): tested by their own cases below. */
const OWN_CASES = ['message', 'webhook_listener'];
const ENV = {
  CLOUDPLANE_QUOTAS: Object.entries(QUOTAS)
    .map(([family, n]) => `${family}=${n}`)
    .join(','),
  CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
};

interface FamilyCase {
  family: keyof typeof QUOTAS;
  path: string;
  /** What the team holds before the test: the bootstrap key is an API key. */
  existing?: number;
  body(i: number): Record<string, unknown>;
  /** Ends one resource so it no longer counts; none for families that cannot be ended. */
  release?(t: TestService, id: string): Promise<void>;
}

const deleteAndWait = (path: string, settled: string, before?: string) => async (t: TestService, id: string) => {
  if (before) await waitForStatus(t, `${path}/${id}`, before);
  expect([200, 202]).toContain((await t.api('DELETE', `${path}/${id}`)).status);
  await waitForStatus(t, `${path}/${id}`, settled);
};

const CASES: FamilyCase[] = [
  {
    family: 'load_balancer',
    path: '/api/v1/load-balancers',
    body: (i) => ({ name: `quota-lb-${i}`, region: 'fra1' }),
    release: deleteAndWait('/api/v1/load-balancers', 'deleted'),
  },
  {
    family: 'vpn_gateway',
    path: '/api/v1/vpn-gateways',
    body: (i) => ({
      name: `quota-vpn-${i}`,
      region: 'fra1',
      tunnel_type: 'wireguard',
      remote_network_cidr: `192.168.${i}.0/24`,
      remote_peer_ip: '93.184.216.34',
    }),
    // A gateway being deleted still holds its tunnel: it counts until it is deleted.
    release: deleteAndWait('/api/v1/vpn-gateways', 'deleted', 'active'),
  },
  {
    family: 'server',
    path: '/api/v1/servers',
    body: (i) => ({ name: `quota-svr-${i}`, region: 'fra1' }),
    release: deleteAndWait('/api/v1/servers', 'deleted', 'running'),
  },
  {
    family: 'bucket',
    path: '/api/v1/object-storage',
    body: (i) => ({ name: `quota-bucket-${i}`, region: 'fra1' }),
    release: deleteAndWait('/api/v1/object-storage', 'deleted', 'available'),
  },
  {
    family: 'file_share',
    path: '/api/v1/file-storage',
    body: (i) => ({ name: `quota-share-${i}`, region: 'fra1' }),
    release: deleteAndWait('/api/v1/file-storage', 'deleted', 'available'),
  },
  {
    family: 'database',
    path: '/api/v1/databases',
    body: (i) => ({ name: `quota-db-${i}`, region: 'fra1' }),
    release: deleteAndWait('/api/v1/databases', 'deleted', 'running'),
  },
  {
    family: 'kubernetes_cluster',
    path: '/api/v1/kubernetes-clusters',
    body: (i) => ({ name: `quota-k8s-${i}`, region: 'fra1', node_pools: [{ name: 'pool', size: 's-1vcpu-2gb', count: 1 }] }),
    release: deleteAndWait('/api/v1/kubernetes-clusters', 'deleted', 'running'),
  },
  {
    family: 'job',
    path: '/api/v1/jobs',
    body: (i) => ({ name: `quota-job-${i}`, command: 'sleep 60' }),
    // A finished job is history: it no longer counts.
    release: async (t, id) => {
      expect((await t.api('POST', `/api/v1/jobs/${id}/cancel`)).status).toBe(200);
    },
  },
  {
    family: 'webhook',
    path: '/api/v1/webhooks',
    body: () => ({ url: 'https://example.com/hook', events: ['server.running'] }),
    release: async (t, id) => {
      expect((await t.api('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(200);
    },
  },
  {
    family: 'api_key',
    path: '/api/v1/settings/api-keys',
    existing: 1,
    body: (i) => ({ name: `quota-key-${i}` }),
    release: async (t, id) => {
      expect((await t.api('DELETE', `/api/v1/settings/api-keys/${id}`)).status).toBe(204);
    },
  },
  {
    family: 'alert',
    path: '/api/v1/alert-policies',
    body: (i) => ({ name: `quota-policy-${i}`, condition: { type: 'job_failed' } }),
    release: deleteAndWait('/api/v1/alert-policies', 'deleted'),
  },
  // Threads cannot be deleted: the quota is for the team's lifetime.
  { family: 'thread', path: '/api/v1/agent/threads', body: (i) => ({ title: `quota thread ${i}` }) },
];

describe('per-team quotas', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService(ENV);
  });
  afterAll(async () => t.stop());

  it.each(CASES.map((c) => [c.family, c] as const))(
    '%s: creates up to the quota, then answers 422 quota_exceeded until one no longer counts',
    async (family, c) => {
      const limit = QUOTAS[family];
      const ids: string[] = [];
      for (let i = 0; i < limit - (c.existing ?? 0); i++) {
        const res = await t.api('POST', c.path, c.body(i));
        expect(res.status).toBe(201);
        ids.push(res.body.data.id);
      }
      const over = await t.api('POST', c.path, c.body(limit));
      expect(over.status).toBe(422);
      expect(over.body.error).toMatchObject({ code: 'quota_exceeded', message: expect.stringContaining(`quota of ${limit} `) });
      expect(over.headers.get('x-request-id')).toBeTruthy();
      if (!c.release) return;
      await c.release(t, ids[0]);
      const again = await t.api('POST', c.path, c.body(limit + 1));
      expect(again.status).toBe(201);
      expect((await t.api('POST', c.path, c.body(limit + 2))).body.error.code).toBe('quota_exceeded');
    },
  );

  it('lets only as many of a burst of concurrent creates through as the quota has room for', async () => {
    const held = (await t.api('GET', '/api/v1/webhooks?limit=100')).body.data as Array<{ id: string }>;
    for (const { id } of held) expect((await t.api('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(200);
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/hook', events: ['server.running'] })),
    );
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 422, 422, 422, 422, 422, 422]);
    expect((await t.api('GET', '/api/v1/webhooks?limit=100')).body.data).toHaveLength(QUOTAS.webhook);
  });

  it('refuses a load balancer made outside the API over the quota as failed, with the reason', async () => {
    // The load balancer quota is full from the first test.
    const spec = {
      name: 'made-with-kubectl',
      region: 'fra1',
      algorithm: 'round_robin',
      protocol: 'http',
      port: 80,
      health_check_path: '/health',
      sticky_sessions: false,
      backends: [],
    };
    let id: string;
    if (clusterMode()) {
      // As kubectl apply makes it: a custom resource without a status in the team's namespace.
      const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
      const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'loadbalancers' };
      await custom.createNamespacedCustomObject({
        ...where,
        body: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'LoadBalancer', metadata: { name: 'made-with-kubectl' }, spec },
      });
      id = await eventually(
        async () => ((await custom.getNamespacedCustomObject({ ...where, name: 'made-with-kubectl' })) as any).metadata.labels?.['cloudplane.dev/id'],
      );
    } else {
      // The embedded store's equivalent: a resource written without a status.
      id = newId('lb');
      await t.service.ctx.store.create({ meta: { kind: 'LoadBalancer', id, team: t.teamId }, spec, status: {} });
    }
    const refused = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'failed', 30_000);
    expect(refused.status_reason).toMatch(/quota of 2 load balancers is used up/);
    // Refused, it holds nothing: the quota is as full as before, no more.
    const listed =
      (await t.api('GET', '/api/v1/load-balancers?limit=100&status=running')).body.data.length +
      (await t.api('GET', '/api/v1/load-balancers?limit=100&status=creating')).body.data.length;
    expect(listed).toBe(QUOTAS.load_balancer);
  });

  /** A team of its own, made by the installation admin, so that what other cases hold does not count. */
  async function freshTeam(name: string) {
    const made = await t.api('POST', '/api/v1/teams', { name, owner_email: `owner@${name.toLowerCase().replace(/\W/g, '')}.example` });
    expect(made.status).toBe(201);
    const key: string = made.body.data.api_key.key;
    return (method: string, path: string, body?: unknown) => t.api(method, path, body, { key });
  }

  it('message: a question and its answer take two places; an ask without room for both is 422 quota_exceeded and writes nothing', async () => {
    const team = await freshTeam('Chatty');
    const thread = await team('POST', '/api/v1/agent/threads', { title: 'long conversation' });
    expect(thread.status).toBe(201);
    const messages = `/api/v1/agent/threads/${thread.body.data.id}/messages`;
    expect((await team('POST', messages, { content: 'How many servers do I have?' })).status).toBe(201);
    // Two of three places are taken: the next exchange needs two.
    const over = await team('POST', messages, { content: 'And load balancers?' });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'quota_exceeded', message: expect.stringContaining('quota of 3 agent messages') });
    expect((await team('GET', messages)).body.data).toHaveLength(2);
    expect((await team('GET', `/api/v1/agent/threads/${thread.body.data.id}`)).body.data.message_count).toBe(2);
  });

  it('webhook_listener: listeners are held to a quota of their own, below the webhook quota, and a deleted one frees its place', async () => {
    const team = await freshTeam('Listening');
    const first = await team('POST', '/api/v1/webhooks/listeners', {});
    expect(first.status).toBe(201);
    const over = await team('POST', '/api/v1/webhooks/listeners', {});
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'quota_exceeded', message: expect.stringContaining('quota of 1 webhook listeners') });
    // The webhook quota (2) still has room: an ordinary subscription is made.
    expect((await team('POST', '/api/v1/webhooks', { url: 'https://example.com/hook', events: ['server.running'] })).status).toBe(201);
    expect((await team('DELETE', `/api/v1/webhooks/${first.body.data.id}`)).status).toBe(200);
    expect((await team('POST', '/api/v1/webhooks/listeners', {})).status).toBe(201);
  });

  it('has a quota for every family the generic create serves, and tests each one with a quota', () => {
    const generic = families.filter((f) => f.standardRoutes === undefined).map((f) => f.name);
    const defaults = quotaLimits(families, {});
    expect(Object.keys(defaults)).toEqual(expect.arrayContaining(generic));
    expect([...CASES.map((c) => c.family), ...OWN_CASES].sort()).toEqual(Object.keys(defaults).sort());
  });

  it('stops start-up on a malformed CLOUDPLANE_QUOTAS, naming it', async () => {
    // A name no family declares is known once the families are: at start-up, before anything opens.
    const unknown = loadConfig({ CLOUDPLANE_QUOTAS: 'widget=3', CLOUDPLANE_DATA_DIR: tempDataDir() });
    await expect(startService(unknown, createLogger('silent'))).rejects.toThrow(/CLOUDPLANE_QUOTAS: "widget" is not one of load_balancer, /);
    expect(() => loadConfig({ CLOUDPLANE_QUOTAS: 'webhook=2.5' })).toThrow(/CLOUDPLANE_QUOTAS/);
    expect(() => loadConfig({ CLOUDPLANE_QUOTAS: 'webhook=-1' })).toThrow(/CLOUDPLANE_QUOTAS/);
    expect(quotaLimits(families, loadConfig({ CLOUDPLANE_QUOTAS: 'webhook=5' }).quotas)).toMatchObject({
      webhook: 5,
      load_balancer: 1000,
      webhook_listener: 25,
    });
  });
});

/**
 * Managed Kubernetes clusters through the API: the lifecycle (creating -> running ->
 * upgrading -> running -> deleting -> deleted), the kubeconfig (YAML, only once running, its
 * token never in a record, a list or an event) and its rotation, the node pools as a named
 * part of the spec, a refused change leaving the cluster degraded, and the rules of a create.
 */
import YAML from 'yaml';
import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';

const POOL = { name: 'workers', size: 's-2vcpu-4gb', count: 3 };
const path = (id: string, rest = '') => `/api/v1/kubernetes-clusters/${id}${rest}`;

describe('Kubernetes clusters', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  const kubeconfig = async (id: string) => {
    const res = await t.api('GET', path(id, '/kubeconfig'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return { text: res.body as string, doc: YAML.parse(res.body as string) };
  };

  it('goes creating -> running with its endpoint and ready nodes, and answers its kubeconfig once running', async () => {
    const created = await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'prod', region: 'fra1', node_pools: [POOL] });
    expect(created.status).toBe(201);
    const cluster = created.body.data;
    expect(cluster.id).toMatch(/^k8s_[0-9a-z]{16,26}$/);
    expect(cluster).toMatchObject({
      name: 'prod',
      status: 'creating',
      region: 'fra1',
      version: null,
      ha: false,
      endpoint: null,
      node_pools: [{ ...POOL, labels: {}, taints: [], auto_scale: null, ready_nodes: 0 }],
    });
    expect(cluster.token).toBeUndefined();
    expect(created.headers.get('location')).toBe(path(cluster.id));
    const early = await t.api('GET', path(cluster.id, '/kubeconfig'));
    if (early.status !== 200) expect([early.status, early.body.error.code]).toEqual([409, 'invalid_state']);

    const running = await waitForStatus(t, path(cluster.id), 'running');
    expect(running.version).toBe('1.34');
    expect(running.endpoint).toBe(`https://${cluster.id.replace('_', '-')}.k8s.fra1.cloudplane.example`);
    expect(running.node_pools[0].ready_nodes).toBe(3);

    const { text, doc } = await kubeconfig(cluster.id);
    expect(doc).toMatchObject({ apiVersion: 'v1', kind: 'Config', 'current-context': `cloudplane-${cluster.id}` });
    expect(doc.clusters[0].cluster.server).toBe(running.endpoint);
    const token: string = doc.users[0].user.token;
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(await t.service.ctx.store.secrets.get(t.teamId, `k8s-token-${cluster.id}`)).toEqual({ value: token });

    const listed = await t.api('GET', '/api/v1/kubernetes-clusters');
    expect(listed.body.data.map((c: { id: string }) => c.id)).toContain(cluster.id);
    const events = await eventually(async () => {
      const page = await t.api('GET', `/api/v1/audit-log?resource_id=${cluster.id}`);
      return page.body.data.some((e: { type: string }) => e.type === 'kubernetes_cluster.running') ? page.body.data : null;
    });
    expect(events.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['kubernetes_cluster.created', 'kubernetes_cluster.running']));
    const got = await t.api('GET', path(cluster.id));
    for (const shown of [JSON.stringify(listed.body), JSON.stringify(events), JSON.stringify(got.body)]) expect(shown).not.toContain(token);
    expect(text).toContain(token);
    // The agent knows a cluster by its id (a prefix with a digit), and tells no token.
    const thread = (await t.api('POST', '/api/v1/agent/threads')).body.data.id;
    const asked = await t.api('POST', `/api/v1/agent/threads/${thread}/messages`, { content: `status of ${cluster.id}` });
    expect(asked.body.data[1].content).toContain(`${cluster.id} "prod" is a Kubernetes cluster; its status is running.`);
    expect(asked.body.data[1].content).not.toContain(token);
    // Every read of the kubeconfig is in the audit log, with who read it, and without the token.
    const reads = await eventually(async () => {
      const page = await t.api('GET', `/api/v1/audit-log?resource_id=${cluster.id}&type=kubernetes_cluster.kubeconfig_read`);
      return page.body.data.length > 0 ? page.body.data : null;
    });
    const creator = events.find((e: { type: string }) => e.type === 'kubernetes_cluster.created').actor;
    expect(reads[0]).toMatchObject({ actor: creator, data: { id: cluster.id, name: 'prod' } });
    expect(creator).toMatch(/^key_/);
    expect(JSON.stringify(reads)).not.toContain(token);
    // A client that takes plain text alone gets the same document as text/plain.
    const plain = await t.api('GET', path(cluster.id, '/kubeconfig'), undefined, { headers: { accept: 'text/plain' } });
    expect([plain.status, plain.headers.get('content-type'), plain.body]).toEqual([200, expect.stringMatching(/^text\/plain/), text]);
  });

  it('rotates the kubeconfig: a new token, the old one gone, kubernetes_cluster.updated', async () => {
    const cluster = (await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'rotated', region: 'fra1', node_pools: [POOL] })).body.data;
    await waitForStatus(t, path(cluster.id), 'running');
    const before = (await kubeconfig(cluster.id)).doc.users[0].user.token;
    const rotated = await t.api('POST', path(cluster.id, '/kubeconfig/rotate'));
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ id: cluster.id });
    expect(JSON.stringify(rotated.body)).not.toContain(before);
    const after = (await kubeconfig(cluster.id)).doc.users[0].user.token;
    expect(after).not.toBe(before);
    expect(JSON.stringify(rotated.body)).not.toContain(after);
    await eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${cluster.id}&type=kubernetes_cluster.updated`)).body.data.length > 0);
  });

  it('upgrades only to a newer version, through upgrading back to running', async () => {
    const cluster = (await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'old', region: 'fra1', version: '1.32', node_pools: [POOL] })).body.data;
    expect(cluster.version).toBe('1.32');
    const tooSoon = await t.api('POST', path(cluster.id, '/upgrade'), { version: '1.33' });
    if (tooSoon.status !== 200) expect([tooSoon.status, tooSoon.body.error.code]).toEqual([409, 'invalid_state']);
    await waitForStatus(t, path(cluster.id), 'running');
    for (const version of ['1.31', '1.32']) {
      const refused = await t.api('POST', path(cluster.id, '/upgrade'), { version });
      expect([refused.status, refused.body.error.code, refused.body.error.details]).toEqual([
        422,
        'validation_failed',
        [{ field: 'version', message: 'must be newer than the version that runs (1.32)' }],
      ]);
    }
    const unsupported = await t.api('POST', path(cluster.id, '/upgrade'), { version: '1.40' });
    expect([unsupported.status, unsupported.body.error.code]).toEqual([422, 'validation_failed']);

    const upgrade = await t.api('POST', path(cluster.id, '/upgrade'), { version: '1.34' });
    expect(upgrade.status).toBe(200);
    expect(upgrade.body.data.status).toBe('upgrading');
    // What runs is the old version until the upgrade is done.
    expect(upgrade.body.data.version).toBe('1.32');
    const busy = await t.api('POST', path(cluster.id, '/node-pools'), { name: 'more', size: 's-1vcpu-2gb', count: 1 });
    if (busy.status !== 201) expect([busy.status, busy.body.error.code]).toEqual([409, 'resource_busy']);
    const upgraded = await eventually(async () => {
      const res = await t.api('GET', path(cluster.id));
      return res.body.data.status === 'running' && res.body.data.version === '1.34' ? res.body.data : null;
    });
    expect(upgraded.version).toBe('1.34');
    // The audit log takes its events from the bus, a moment after the status that told them was written.
    await eventually(async () => {
      const types = (await t.api('GET', `/api/v1/audit-log?resource_id=${cluster.id}`)).body.data.map((e: { type: string }) => e.type);
      return types.includes('kubernetes_cluster.upgrading') && types.filter((type: string) => type === 'kubernetes_cluster.running').length >= 2;
    });
  });

  it('manages node pools as a part of the spec: list, create, get, update, delete, not the last', async () => {
    const cluster = (await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'pools', region: 'fra1', node_pools: [POOL] })).body.data;
    await waitForStatus(t, path(cluster.id), 'running');
    const added = await t.api('POST', path(cluster.id, '/node-pools'), {
      name: 'gpu',
      size: 's-8vcpu-16gb',
      count: 2,
      labels: { 'cloudplane.dev/role': 'gpu' },
      taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
      auto_scale: { min_nodes: 1, max_nodes: 4 },
    });
    expect(added.status).toBe(201);
    expect(added.headers.get('location')).toBe(path(cluster.id, '/node-pools/gpu'));
    expect(added.body.data).toMatchObject({ name: 'gpu', count: 2, auto_scale: { min_nodes: 1, max_nodes: 4 } });
    const taken = await t.api('POST', path(cluster.id, '/node-pools'), { name: 'gpu', size: 's-1vcpu-2gb', count: 1 });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'name_taken']);

    const ready = await eventually(async () => {
      const res = await t.api('GET', path(cluster.id, '/node-pools/gpu'));
      return res.body.data.ready_nodes === 2 ? res.body.data : null;
    });
    expect(ready.labels).toEqual({ 'cloudplane.dev/role': 'gpu' });
    const list = await t.api('GET', path(cluster.id, '/node-pools'));
    expect(list.body.data.map((p: { name: string }) => p.name)).toEqual(['workers', 'gpu']);

    const outside = await t.api('PATCH', path(cluster.id, '/node-pools/gpu'), { count: 5 });
    expect([outside.status, outside.body.error.code, outside.body.error.details[0].field]).toEqual([422, 'validation_failed', 'node_pools[1].count']);
    const scaled = await t.api('PATCH', path(cluster.id, '/node-pools/gpu'), { count: 4, auto_scale: null, taints: [] });
    expect(scaled.status).toBe(200);
    expect(scaled.body.data).toMatchObject({ count: 4, auto_scale: null, taints: [], labels: { 'cloudplane.dev/role': 'gpu' } });
    await eventually(async () => (await t.api('GET', path(cluster.id, '/node-pools/gpu'))).body.data.ready_nodes === 4);

    const missing = await t.api('GET', path(cluster.id, '/node-pools/nope'));
    expect([missing.status, missing.body.error.code]).toEqual([404, 'node_pool_not_found']);
    expect((await t.api('DELETE', path(cluster.id, '/node-pools/gpu'))).status).toBe(204);
    const last = await t.api('DELETE', path(cluster.id, '/node-pools/workers'));
    expect([last.status, last.body.error.code]).toEqual([409, 'invalid_state']);
    expect((await t.api('GET', path(cluster.id))).body.data.node_pools.map((p: { name: string }) => p.name)).toEqual(['workers']);
  });

  it('is degraded while the provider refuses a change, and running once it is applied', async () => {
    const failures = t.service.ctx.config.simulation.failures;
    const cluster = (await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'flaky', region: 'fra1', node_pools: [POOL] })).body.data;
    await waitForStatus(t, path(cluster.id), 'running');
    failures.kubernetes_cluster = 1;
    try {
      expect((await t.api('PATCH', path(cluster.id, '/node-pools/workers'), { count: 5 })).status).toBe(200);
      const degraded = await waitForStatus(t, path(cluster.id), 'degraded');
      expect(degraded.status_reason).toContain('not applied');
      // It runs as before: the pool's nodes are those it had.
      expect(degraded.node_pools[0]).toMatchObject({ count: 5, ready_nodes: 3 });
    } finally {
      delete failures.kubernetes_cluster;
    }
    const recovered = await waitForStatus(t, path(cluster.id), 'running', 30_000);
    expect(recovered.node_pools[0].ready_nodes).toBe(5);
  }, 60_000);

  it('refuses what it cannot make, and deletes through deleting', async () => {
    const bad = (body: object) => t.api('POST', '/api/v1/kubernetes-clusters', { name: 'bad', region: 'fra1', ...body });
    for (const [body, field] of [
      [{ node_pools: [] }, 'node_pools'],
      [{ node_pools: Array.from({ length: 11 }, (_, i) => ({ ...POOL, name: `p${i}` })) }, 'node_pools'],
      [{ node_pools: [POOL, POOL] }, 'node_pools[1].name'],
      [{ node_pools: [{ ...POOL, name: 'Bad_Name' }] }, 'name'],
      [{ node_pools: [{ ...POOL, size: 'huge' }] }, 'size'],
      [{ node_pools: [{ ...POOL, count: 101 }] }, 'count'],
      [{ node_pools: [{ ...POOL, auto_scale: { min_nodes: 4, max_nodes: 6 } }] }, 'node_pools[0].count'],
      [{ node_pools: [{ ...POOL, auto_scale: { min_nodes: 5, max_nodes: 2 } }] }, 'node_pools[0].auto_scale'],
      [{ node_pools: [{ ...POOL, taints: [{ key: 'a', value: 'b', effect: 'Sometimes' }] }] }, 'effect'],
      [{ node_pools: [{ ...POOL, labels: { 'not a key': 'x' } }] }, 'labels'],
      [{ node_pools: [POOL], version: '1.20' }, 'version'],
      [{ node_pools: [POOL], token: 'mine' }, 'token'],
    ] as const) {
      const refused = await bad(body);
      expect([refused.status, refused.body.error.code]).toEqual([422, 'validation_failed']);
      expect(JSON.stringify(refused.body.error)).toContain(field);
    }
    const unknown = await t.api('GET', path('k8s_00000000000000000000', '/kubeconfig'));
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'kubernetes_cluster_not_found']);

    const cluster = (await t.api('POST', '/api/v1/kubernetes-clusters', { name: 'scratch', region: 'fra1', ha: true, node_pools: [POOL] })).body.data;
    expect(cluster.ha).toBe(true);
    await waitForStatus(t, path(cluster.id), 'running');
    const deleted = await t.api('DELETE', path(cluster.id));
    expect(deleted.status).toBe(202);
    expect(['deleting', 'deleted']).toContain(deleted.body.data.status);
    await waitForStatus(t, path(cluster.id), 'deleted');
    const config = await t.api('GET', path(cluster.id, '/kubeconfig'));
    expect([config.status, config.body.error.code]).toEqual([409, 'invalid_state']);
    const rotate = await t.api('POST', path(cluster.id, '/kubeconfig/rotate'));
    expect([rotate.status, rotate.body.error.code]).toEqual([409, 'invalid_state']);
  });
});

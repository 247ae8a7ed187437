/**
 * kstatus (sigs.k8s.io/cli-utils' status.Compute, what Flux, Argo CD's kstatus checks and
 * `kpt live status` run) on every kind's custom resource as the kube-apiserver returns it.
 * The resources are made through the API of the service in cluster mode; each is then
 * paused (so no reconciler moves it) and written through the service's own writer into
 * each state of its family. kstatus must call work under way InProgress, a failure Failed,
 * and anything at rest Current; and a spec newer than what was observed InProgress.
 *
 * The checker is the real library, built by scripts/build-kstatus.sh from the Go module
 * proxy (test/tools/kstatus).
 */
import { execFileSync } from 'node:child_process';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { clusterEnv, clusterFor, kubeConfigOf, stopClusters } from '../helpers/cluster';
import { builtTool } from '../helpers/kube-apiserver';
import { eventually, FAST_ENV, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { Receiver, startReceiver } from '../helpers/receiver';
import { families } from '../../src/resources/registry';
import { namespaceOfTeam } from '../../src/store/kubernetes/names';
import type { AnyFamily } from '../../src/resources/family';

jest.setTimeout(240_000);

const GROUP = 'cloudplane.dev';
const VERSION = 'v1alpha1';
const SYSTEM_NAMESPACE = 'cloudplane-system';

/** The states of work under way, per kind; kstatus must say InProgress in them. Written out here, not taken from the code under test. */
const IN_PROGRESS: Record<string, string[]> = {
  LoadBalancer: ['creating'],
  VpnGateway: ['creating', 'deleting'],
  Server: ['creating', 'stopping', 'starting', 'rebooting', 'restoring'],
  ServerBackup: ['creating'],
  Bucket: ['creating'],
  FileShare: ['creating'],
  Database: ['creating'],
  KubernetesCluster: ['creating', 'upgrading', 'deleting'],
  CloudJob: ['queued', 'running'],
  WebhookDelivery: ['pending'],
};

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const expectedFor = (kind: string, state: string) => (state === 'failed' ? 'Failed' : (IN_PROGRESS[kind] ?? []).includes(state) ? 'InProgress' : 'Current');

interface KstatusAnswer {
  status: string;
  message: string;
  error?: string;
}

/** kstatus of each object given, as the real library computes it. */
function kstatus(objects: object[]): KstatusAnswer[] {
  const binary = builtTool('kstatus', 'build-kstatus.sh');
  const out = execFileSync(binary, { input: objects.map((o) => JSON.stringify(o)).join('\n') + '\n', encoding: 'utf8' });
  return out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as KstatusAnswer);
}

describe('kstatus on every kind', () => {
  let t: TestService;
  let custom: CustomObjectsApi;
  let namespace: string;
  let receiver: Receiver;

  const crsOf = async (family: AnyFamily) =>
    ((await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: family.plural })) as { items: any[] }).items;
  const readCr = async (family: AnyFamily, name: string) =>
    (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: family.plural, name })) as any;
  const idOf = (cr: any) => cr.metadata.labels[`${GROUP}/id`] as string;

  beforeAll(async () => {
    const dataDir = tempDataDir();
    const env = await clusterEnv(dataDir);
    custom = kubeConfigOf(await clusterFor(dataDir)).makeApiClient(CustomObjectsApi);
    receiver = await startReceiver();
    t = await startTestService({ ...FAST_ENV, ...env, CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, dataDir);
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);

    // One of every kind through the API (teams, users and keys come with the bootstrap), and
    // one delivery: of the one event the webhook is subscribed to.
    const webhook = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['server.running'] });
    expect(webhook.status).toBe(201);
    const made: Array<[string, string]> = [];
    const post = async (path: string, body: object, state: string) => {
      const answer = await t.api('POST', path, body);
      expect([path, answer.status, answer.status < 300 ? '' : JSON.stringify(answer.body)]).toEqual([path, answer.status < 300 ? answer.status : 201, '']);
      made.push([`${path}/${answer.body.data.id}`, state]);
    };
    await post('/api/v1/load-balancers', { name: 'web-lb', region: 'fra1' }, 'running');
    await post(
      '/api/v1/vpn-gateways',
      {
        name: 'office',
        region: 'fra1',
        tunnel_type: 'ipsec',
        local_network_cidr: '10.10.0.0/16',
        remote_network_cidr: '192.168.10.0/24',
        remote_peer_ip: '93.184.216.34',
      },
      'active',
    );
    await post('/api/v1/servers', { name: 'web-1', region: 'fra1' }, 'running');
    await post('/api/v1/object-storage', { name: 'kstatus-bucket', region: 'fra1' }, 'available');
    await post('/api/v1/file-storage', { name: 'share-1', region: 'fra1' }, 'available');
    await post('/api/v1/databases', { name: 'db-1', region: 'fra1' }, 'running');
    await post('/api/v1/kubernetes-clusters', { name: 'k8s-1', region: 'fra1', node_pools: [{ name: 'pool', size: 's-1vcpu-2gb', count: 1 }] }, 'running');
    await post('/api/v1/jobs', { name: 'once', command: 'true' }, 'completed');
    const thread = await t.api('POST', '/api/v1/agent/threads', { title: 'questions' });
    expect(thread.status).toBe(201);
    expect((await t.api('POST', `/api/v1/agent/threads/${thread.body.data.id}/messages`, { content: 'what is running?' })).status).toBe(201);
    for (const [path, state] of made) await waitForStatus(t, path, state, 60_000);
    // A backup of the server, once it runs.
    const serverPath = made.find(([path]) => path.startsWith('/api/v1/servers/'))![0];
    const backup = await t.api('POST', `${serverPath}/backups`, {});
    expect(backup.status).toBe(201);
    await waitForStatus(t, `${serverPath}/backups/${backup.body.data.id}`, 'completed', 60_000);
    // An alert policy, and the incident it opens: the server behind the load balancer stops, its backend is unhealthy.
    const [lb, server] = [made[0][0], made[2][0]].map((path) => path.split('/').pop()!);
    const policy = await t.api('POST', '/api/v1/alert-policies', { name: 'lb down', condition: { type: 'backend_unhealthy', resource_id: lb } });
    expect(policy.status).toBe(201);
    expect((await t.api('POST', `/api/v1/load-balancers/${lb}/attach`, { server_id: server })).status).toBe(200);
    expect((await t.api('POST', `/api/v1/servers/${server}/stop`)).status).toBe(200);
    await eventually(async () => (await t.api('GET', '/api/v1/incidents')).body.data?.length > 0, 60_000, 200);
    // Running again, as the tests below expect the server (its incident resolves with the alert).
    expect((await t.api('POST', `/api/v1/servers/${server}/start`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 60_000);
    await waitForStatus(t, `/api/v1/alert-policies/${policy.body.data.id}`, 'ok', 60_000);
    await eventually(async () => (await t.api('GET', '/api/v1/incidents?status=resolved')).body.data?.length > 0, 60_000, 200);
    // A delivery of one of those events to the webhook's receiver.
    await eventually(
      async () => (await crsOf(families.find((f) => f.kind === 'WebhookDelivery')!)).some((cr) => cr.status?.status === 'succeeded'),
      60_000,
      200,
    );
  });

  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await stopClusters();
  });

  it('says Current for every kind at rest, as the service left it', async () => {
    // An API create's first status rides sealed in annotations until a status write (a
    // reconciler's, or the store's own a few seconds on: docs/architecture/cluster-mode.md).
    const crs = await eventually(
      async () => {
        const all = (await Promise.all(families.map(crsOf))).flat();
        return all.every((cr) => cr.status) ? all : null;
      },
      30_000,
      200,
    );
    expect(new Set(crs.map((cr) => cr.kind))).toEqual(new Set(families.map((f) => f.kind)));
    const answers = kstatus(crs);
    expect(crs.map((cr, i) => [cr.kind, cr.status.status, answers[i].status])).toEqual(crs.map((cr) => [cr.kind, cr.status.status, 'Current']));
    // The Kubernetes form: observedGeneration, with no snake_case twin written.
    for (const cr of crs) {
      expect(cr.status.observedGeneration).toBe(cr.metadata.generation);
      expect(cr.status).not.toHaveProperty('observed_generation');
    }
  });

  it('says Current for a job cancelled on request (a spec change the cancel observes)', async () => {
    const job = await t.api('POST', '/api/v1/jobs', { name: 'long', command: 'sleep 30' });
    expect(job.status).toBe(201);
    await waitForStatus(t, `/api/v1/jobs/${job.body.data.id}`, 'running', 60_000);
    expect((await t.api('POST', `/api/v1/jobs/${job.body.data.id}/cancel`)).status).toBe(200);
    const family = families.find((f) => f.kind === 'CloudJob')!;
    const cr = await eventually(async () => {
      const read = await readCr(family, job.body.data.id.replace('_', '-'));
      return read.status.status === 'cancelled' ? read : null;
    }, 30_000);
    expect(cr.metadata.generation).toBe(2);
    expect(kstatus([cr])[0]).toMatchObject({ status: 'Current' });
  });

  it('says InProgress for work under way, Failed for a failure and Current at rest, in every state of every kind', async () => {
    const checked: string[] = [];
    // All paused first: no reconciler writes over the states this test writes, nor acts on
    // another kind's (a backup goes when its server is written `deleted`).
    const paused = new Map<string, any>();
    for (const family of families) {
      const [cr] = await crsOf(family);
      await custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: family.plural,
          name: cr.metadata.name,
          body: { metadata: { annotations: { [`${GROUP}/paused`]: 'true' } } },
        },
        mergePatch,
      );
      await eventually(async () => (await t.service.ctx.store.get(family.kind, t.teamId, idOf(cr)))?.meta.paused, 10_000);
      paused.set(family.kind, cr);
    }
    for (const family of families) {
      const cr = paused.get(family.kind);
      for (const state of family.states) {
        await t.service.ctx.writer.mutateStatus(
          family,
          t.teamId,
          idOf(cr),
          () => ({ status: state, status_reason: state === 'failed' ? 'The provider said no.' : null }),
          'system',
        );
        const [answer] = kstatus([await readCr(family, cr.metadata.name)]);
        expect([family.kind, state, answer.status]).toEqual([family.kind, state, expectedFor(family.kind, state)]);
        checked.push(`${family.kind}/${state}`);
      }
    }
    expect(checked.length).toBe(families.reduce((n, f) => n + f.states.length, 0));
  });

  it('says InProgress while the spec is newer than what was observed', async () => {
    const family = families.find((f) => f.kind === 'Server')!;
    const [cr] = await crsOf(family);
    await t.service.ctx.writer.mutateStatus(family, t.teamId, idOf(cr), () => ({ status: 'running', status_reason: null }), 'system');
    expect(kstatus([await readCr(family, cr.metadata.name)])[0].status).toBe('Current');
    // The resource is paused (above): nothing observes the new generation.
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural: family.plural, name: cr.metadata.name, body: { spec: { power_state: 'off' } } },
      mergePatch,
    );
    const changed = await readCr(family, cr.metadata.name);
    expect(changed.metadata.generation).toBeGreaterThan(changed.status.observedGeneration);
    const [answer] = kstatus([changed]);
    expect(answer.status).toBe('InProgress');
    expect(answer.message).toMatch(/generation/);
  });

  it('reads a custom resource whose status an earlier version wrote in snake_case', async () => {
    const family = families.find((f) => f.kind === 'Bucket')!;
    const [cr] = await crsOf(family);
    const { observedGeneration, ...rest } = cr.status;
    const legacy = { ...cr, status: { ...rest, observed_generation: observedGeneration } };
    await custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: family.plural,
      name: cr.metadata.name,
      body: legacy,
    });
    const stored = await eventually(async () => {
      const object = await t.service.ctx.store.get<unknown, { observed_generation: number }>(family.kind, t.teamId, idOf(cr));
      return object && object.meta.resourceVersion !== cr.metadata.resourceVersion ? object : null;
    }, 10_000);
    expect(stored.status.observed_generation).toBe(observedGeneration);
    expect((await readCr(family, cr.metadata.name)).status.observed_generation).toBe(observedGeneration);
  });
});

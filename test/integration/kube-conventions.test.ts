/**
 * What a kubectl or GitOps user sees of the operator's Kubernetes conventions, on a real
 * control plane (kube-apiserver, etcd, kube-controller-manager with its garbage
 * collector, kube-scheduler; KWOK plays the kubelets), with the kubernetes server driver
 * making real Pods, and the operator running under the chart's RBAC:
 * - `kubectl describe` lists the Events of a resource's transitions and refusals, and no
 *   Event carries a secret;
 * - `cloudplane.dev/paused: "true"` stops reconciling one resource until removed;
 * - `spec.deletionPolicy: Orphan` leaves the Pod in place when the Server is deleted.
 */
import { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { kubectlOn } from '../helpers/kube-apiserver';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';

jest.setTimeout(300_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const GROUP = 'cloudplane.dev';
const VERSION = 'v1alpha1';
const PAUSED = `${GROUP}/paused`;
const PRE_SHARED_KEY = 'conventions-psk-9f3c1e7a2b';

describe('Kubernetes conventions: Events, pause, deletion policy', () => {
  let cluster: WorkloadCluster;
  let t: TestService;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let namespace: string;

  const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);
  const podOf = async (id: string): Promise<V1Pod | undefined> => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `${GROUP}/id=${id}` });
    return pods.items.find((p) => !p.metadata?.deletionTimestamp);
  };
  const serverCr = (id: string) =>
    custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'servers', name: objectName(id) }) as Promise<any>;
  const serverGone = (id: string) =>
    serverCr(id).then(
      () => false,
      (err) => (err as { code?: number }).code === 404,
    );
  const newRunningServer = async (name: string): Promise<string> => {
    const created = await t.api('POST', '/api/v1/servers', { name, region: 'fra1' });
    expect(created.status).toBe(201);
    await waitForStatus(t, `/api/v1/servers/${created.body.data.id}`, 'running', 90_000);
    expect(await podOf(created.body.data.id)).toBeDefined();
    return created.body.data.id;
  };

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    t = await startServiceUnderChartRbac(cluster, {
      // Deleted records go at once: the deletion's end is what these tests look at.
      CLOUDPLANE_DELETED_RETENTION_SECONDS: '0',
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await cluster?.stop();
  });

  it("kubectl describe lists the Events of a server's transitions", async () => {
    expect(t.service.ctx.drivers.chosen).toMatchObject({ server: 'kubernetes' });
    const id = await newRunningServer('described');
    const described = await eventually(
      async () => {
        const text = await kubectl('describe', 'servers.cloudplane.dev', objectName(id), '-n', namespace);
        return /Normal\s+Creating\s/.test(text) && /Normal\s+Running\s/.test(text) ? text : null;
      },
      30_000,
      500,
    );
    expect(described).toMatch(/Events:/);
    expect(described).toMatch(/The server was accepted; it is creating\./);
    expect(described).toMatch(/The server went from creating to running\./);
  });

  it("kubectl describe shows a Warning for a spec refused, with the API's message", async () => {
    const manifest = JSON.stringify({
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'Server',
      metadata: { name: 'refused', namespace },
      spec: { name: 'refused', region: 'nowhere1' },
    });
    await kubectlOn(cluster.kubeconfigPath)(['apply', '-f', '-'], manifest);
    const described = await eventually(
      async () => {
        const text = await kubectl('describe', 'servers.cloudplane.dev', 'refused', '-n', namespace);
        return /Warning\s+SpecRefused\s/.test(text) ? text : null;
      },
      30_000,
      500,
    );
    expect(described).toMatch(/The spec was refused: .*nowhere1/);
  });

  it('no Event carries a secret', async () => {
    const created = await t.api('POST', '/api/v1/vpn-gateways', {
      name: 'office',
      region: 'fra1',
      tunnel_type: 'ipsec',
      remote_network_cidr: '192.168.10.0/24',
      remote_peer_ip: '93.184.216.34',
      pre_shared_key: PRE_SHARED_KEY,
    });
    expect([201, 202]).toContain(created.status);
    const events = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({ namespace });
        return list.items.some((e) => e.involvedObject.kind === 'VpnGateway') ? list.items : null;
      },
      30_000,
      500,
    );
    const all = JSON.stringify(events);
    expect(all).not.toContain(PRE_SHARED_KEY);
    expect(all).not.toContain(t.key);
  });

  it('a paused server is left alone: a spec change waits, and is carried out once the annotation is removed', async () => {
    const paused = await newRunningServer('paused');
    const control = await newRunningServer('control');
    await kubectl('annotate', 'servers.cloudplane.dev', objectName(paused), '-n', namespace, `${PAUSED}=true`);
    await eventually(async () => (await t.service.ctx.store.get('Server', t.teamId, paused))?.meta.paused, 10_000);
    const before = await serverCr(paused);

    // Power off both, the paused one first: the other's whole stop (its Pod deleted) is the
    // measure of how long the paused one has had to react, had it not been paused.
    for (const id of [paused, control]) {
      await kubectl('patch', 'servers.cloudplane.dev', objectName(id), '-n', namespace, '--type', 'merge', '-p', '{"spec":{"power_state":"off"}}');
    }
    await waitForStatus(t, `/api/v1/servers/${control}`, 'stopped', 90_000);
    expect(await podOf(control)).toBeUndefined();

    const held = await serverCr(paused);
    expect(held.metadata.generation).toBe(before.metadata.generation + 1);
    // (The outbox of events written before the pause may still be drained: not a status change.)
    const withoutOutbox = ({ pending_events: _outbox, ...status }: Record<string, unknown>) => status;
    expect(withoutOutbox(held.status)).toEqual(withoutOutbox(before.status));
    expect(await podOf(paused)).toBeDefined();
    expect((await t.api('GET', `/api/v1/servers/${paused}`)).body.data.status).toBe('running');

    await kubectl('annotate', 'servers.cloudplane.dev', objectName(paused), '-n', namespace, `${PAUSED}-`);
    await waitForStatus(t, `/api/v1/servers/${paused}`, 'stopped', 90_000);
    expect(await podOf(paused)).toBeUndefined();
    expect((await serverCr(paused)).status.observedGeneration).toBe(held.metadata.generation);
  });

  it('deletionPolicy Orphan leaves the Pod in place, free of its owner; Delete (the default) removes it', async () => {
    const orphaned = await newRunningServer('orphaned');
    const deleted = await newRunningServer('deleted');
    const orphanedPod = (await podOf(orphaned))!;
    expect(orphanedPod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Server', name: objectName(orphaned) })]);
    await kubectl('patch', 'servers.cloudplane.dev', objectName(orphaned), '-n', namespace, '--type', 'merge', '-p', '{"spec":{"deletionPolicy":"Orphan"}}');

    for (const id of [orphaned, deleted]) await kubectl('delete', 'servers.cloudplane.dev', objectName(id), '-n', namespace, '--wait=false');
    await eventually(async () => (await serverGone(orphaned)) && (await serverGone(deleted)), 90_000, 500);

    // The default deletion removed its Pod; by then the garbage collector has orphaned the other's.
    await eventually(async () => (await podOf(deleted)) === undefined, 90_000, 500);
    const kept = (await podOf(orphaned))!;
    expect(kept).toBeDefined();
    expect(kept.metadata?.uid).toBe(orphanedPod.metadata?.uid);
    expect(kept.metadata?.ownerReferences ?? []).toEqual([]);
    expect((await t.api('GET', `/api/v1/servers/${orphaned}`)).status).toBe(404);
  });
});

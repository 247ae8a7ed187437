/**
 * File shares as PersistentVolumeClaims, end to end in cluster mode: the operator runs
 * with its kubernetes drivers as the chart's ServiceAccount, under exactly the chart's
 * RBAC (test/helpers/chart.ts), against the workload cluster, where the real
 * kube-controller-manager binds claims to volumes and KWOK plays the kubelets.
 *
 * The test is the cluster's administrator: it makes two StorageClasses of its own (one
 * with allowVolumeExpansion, one without) and static NFS-typed PersistentVolumes,
 * ReadWriteMany, of each, as an NFS server's administrator would. Nothing mounts NFS here
 * (KWOK runs no container): what is checked is what Kubernetes does with the objects the
 * drivers make: the claim bound to its volume, the server's Pod spec carrying the claim
 * at the documented path, and the claim's request growing, or refused by the API server.
 */
import { CoreV1Api, StorageV1Api, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { expectOnlyListedCalls, operatorKubeconfigFromChart, teamNamespaceBindingEnv } from '../helpers/chart';
import { reconcileCounter } from '../../src/metrics';

/** Reconcile passes of file shares so far, whatever their result. */
const fileSharePasses = async () => (await reconcileCounter.get()).values.filter((v) => v.labels.kind === 'FileShare').reduce((sum, v) => sum + v.value, 0);

jest.setTimeout(240_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const EXPANDABLE = 'cp-test-nfs-expandable';
const FIXED = 'cp-test-nfs-fixed';

describe("cluster mode: file shares as PersistentVolumeClaims, mounted into servers' Pods", () => {
  let cluster: WorkloadCluster;
  let t: TestService;
  let core: CoreV1Api;
  let namespace: string;
  let operatorKubeconfig: string;

  const operatorEnv = (storageClass: string) => ({
    CLOUDPLANE_STORE: 'kubernetes',
    CLOUDPLANE_KUBECONFIG: operatorKubeconfig,
    ...teamNamespaceBindingEnv(),
    CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
    CLOUDPLANE_FILE_SHARE_STORAGE_CLASS: storageClass,
    // Binding and changes of claims must reach the operator through its watch of what it made.
    CLOUDPLANE_RESYNC_SECONDS: '3600',
  });

  /** An NFS export, as a PersistentVolume of `storageClassName`, RWX, of 100 GiB. */
  const nfsVolume = (name: string, storageClassName: string) =>
    core.createPersistentVolume({
      body: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name },
        spec: {
          capacity: { storage: '100Gi' },
          accessModes: ['ReadWriteMany'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName,
          nfs: { server: '192.0.2.10', path: `/exports/${name}` },
        },
      },
    });

  const claimOf = async (shareId: string): Promise<V1PersistentVolumeClaim | null> =>
    core.readNamespacedPersistentVolumeClaim({ namespace, name: objectName(shareId) }).catch((err) => (err?.code === 404 ? null : Promise.reject(err)));

  /** The server's Pod that is not going away, if there is one. */
  const podOf = async (id: string): Promise<V1Pod | undefined> => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${id}` });
    return pods.items.find((p) => !p.metadata?.deletionTimestamp);
  };

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const storage = cluster.kubeConfig.makeApiClient(StorageV1Api);
    // Static provisioning: the classes name no provisioner that would make volumes; the volumes are made here.
    for (const [name, allowVolumeExpansion] of [
      [EXPANDABLE, true],
      [FIXED, false],
    ] as const) {
      await storage.createStorageClass({
        body: {
          apiVersion: 'storage.k8s.io/v1',
          kind: 'StorageClass',
          metadata: { name },
          provisioner: 'kubernetes.io/no-provisioner',
          volumeBindingMode: 'Immediate',
          allowVolumeExpansion,
        },
      });
    }
    for (const n of [1, 2, 3, 4, 5]) await nfsVolume(`nfs-expandable-${n}`, EXPANDABLE);
    await nfsVolume('nfs-fixed-1', FIXED);
    operatorKubeconfig = operatorKubeconfigFromChart(cluster, cluster.workDir);
    t = await startTestService(operatorEnv(EXPANDABLE));
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await cluster?.stop();
  });

  it('chooses the kubernetes file share driver by default in cluster mode', () => {
    expect(t.service.ctx.drivers.chosen.file_share).toBe('kubernetes');
  });

  it('a share is a RWX claim of the configured class that the controller manager binds; available once Bound, mount_target names it', async () => {
    const created = await t.api('POST', '/api/v1/file-storage', { name: 'home', region: 'fra1', size_gb: 20 });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const available = await waitForStatus(t, `/api/v1/file-storage/${id}`, 'available', 60_000);
    const claim = (await claimOf(id))!;
    expect(claim.status?.phase).toBe('Bound');
    expect(claim.spec?.volumeName).toMatch(/^nfs-expandable-/);
    expect(claim.spec).toMatchObject({ accessModes: ['ReadWriteMany'], storageClassName: EXPANDABLE, resources: { requests: { storage: '20Gi' } } });
    expect(claim.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
    expect(claim.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'FileShare', controller: true, blockOwnerDeletion: true })]);
    expect(available.mount_target).toBe(`${namespace}/${objectName(id)}`);
  });

  it("attach puts the claim into the server's Pod at /mnt/file-storage/<id> (the Pod is replaced); detach takes it out again", async () => {
    const share = await waitForStatus(
      t,
      `/api/v1/file-storage/${(await t.api('POST', '/api/v1/file-storage', { name: 'data', region: 'fra1', size_gb: 10 })).body.data.id}`,
      'available',
      60_000,
    );
    const server = (await t.api('POST', '/api/v1/servers', { name: 'worker', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running', 60_000);
    const before = (await podOf(server.id))!;
    expect(before.spec?.volumes ?? []).toEqual([]);

    const attached = await t.api('POST', `/api/v1/file-storage/${share.id}/attach`, { server_id: server.id });
    expect(attached.status).toBe(200);
    const mountPath = `/mnt/file-storage/${share.id}`;
    expect(attached.body.data.mounts).toEqual([{ file_share_id: share.id, mount_path: mountPath }]);
    const mounted = await eventually(
      async () => {
        const pod = await podOf(server.id);
        const record = (await t.api('GET', `/api/v1/servers/${server.id}`)).body.data;
        return pod &&
          pod.metadata?.uid !== before.metadata?.uid &&
          pod.status?.phase === 'Running' &&
          record.status === 'running' &&
          record.ipv4 === pod.status?.podIP
          ? pod
          : null;
      },
      90_000,
      200,
    );
    const volume = mounted.spec!.volumes!.find((v) => v.persistentVolumeClaim);
    expect(volume?.persistentVolumeClaim?.claimName).toBe(objectName(share.id));
    expect(mounted.spec!.containers[0].volumeMounts).toEqual(expect.arrayContaining([expect.objectContaining({ name: volume!.name, mountPath })]));

    // The attached share cannot be deleted from under the server.
    const busy = await t.api('DELETE', `/api/v1/file-storage/${share.id}`);
    expect({ status: busy.status, code: busy.body.error?.code }).toEqual({ status: 409, code: 'resource_busy' });

    expect((await t.api('POST', `/api/v1/file-storage/${share.id}/detach`, { server_id: server.id })).status).toBe(200);
    const unmounted = await eventually(
      async () => {
        const pod = await podOf(server.id);
        return pod && pod.metadata?.uid !== mounted.metadata?.uid && pod.status?.phase === 'Running' ? pod : null;
      },
      90_000,
      200,
    );
    expect((unmounted.spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim)).toEqual([]);
    expect(unmounted.spec!.containers[0].volumeMounts ?? []).toEqual([]);
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running', 60_000);

    // Detached, it can go: its claim is deleted, and the share is released once the claim is gone.
    const deleted = await t.api('DELETE', `/api/v1/file-storage/${share.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    await eventually(async () => (await claimOf(share.id)) === null, 60_000, 200);
    await eventually(
      async () => {
        const cr = (await t.service.ctx.store.get('FileShare', t.teamId, share.id)) as { status: { external?: unknown } } | undefined;
        return cr !== undefined && cr.status.external === undefined;
      },
      60_000,
      200,
    );
  });

  it("growth expands the claim's request where the class allows it; shrinking is 422", async () => {
    const { id } = (await t.api('POST', '/api/v1/file-storage', { name: 'growing', region: 'fra1', size_gb: 20 })).body.data;
    await waitForStatus(t, `/api/v1/file-storage/${id}`, 'available', 60_000);
    const grown = await t.api('PATCH', `/api/v1/file-storage/${id}`, { size_gb: 40 });
    expect(grown.status).toBe(200);
    await eventually(async () => (await claimOf(id))?.spec?.resources?.requests?.storage === '40Gi', 60_000, 200);
    await eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=file_share.updated`)).body.data.length === 1, 30_000, 200);
    expect((await t.api('GET', `/api/v1/file-storage/${id}`)).body.data).toMatchObject({ status: 'available', status_reason: null, size_gb: 40 });

    const shrink = await t.api('PATCH', `/api/v1/file-storage/${id}`, { size_gb: 30 });
    expect({ status: shrink.status, code: shrink.body.error?.code }).toEqual({ status: 422, code: 'validation_failed' });
    expect((await claimOf(id))?.spec?.resources?.requests?.storage).toBe('40Gi');
  });

  it("a claim deleted by hand is made again at once, through the driver's watch of what it made", async () => {
    const { id } = (await t.api('POST', '/api/v1/file-storage', { name: 'sturdy', region: 'fra1', size_gb: 10 })).body.data;
    await waitForStatus(t, `/api/v1/file-storage/${id}`, 'available', 60_000);
    const before = (await claimOf(id))!;
    // Bound and settled, the share asks for no further pass: only the watch can bring one (the resync is an hour away).
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: objectName(id) });
    const after = await eventually(
      async () => {
        const claim = await claimOf(id);
        return claim && claim.metadata?.uid !== before.metadata?.uid && !claim.metadata?.deletionTimestamp ? claim : null;
      },
      60_000,
      200,
    );
    expect(after.metadata?.labels?.['cloudplane.dev/id']).toBe(id);
    expect(after.spec).toMatchObject({ accessModes: ['ReadWriteMany'], storageClassName: EXPANDABLE, resources: { requests: { storage: '10Gi' } } });
  });

  it("on a class without allowVolumeExpansion the API server's refusal shows in status_reason, and the share stays available at its size", async () => {
    // The operator again with the other class: the one before hands its leadership over as it stops.
    const key = t.key;
    await t.stop();
    t = await startTestService({ ...operatorEnv(FIXED), CLOUDPLANE_BOOTSTRAP_API_KEY: key });
    const { id } = (await t.api('POST', '/api/v1/file-storage', { name: 'fixed', region: 'fra1', size_gb: 20 })).body.data;
    await waitForStatus(t, `/api/v1/file-storage/${id}`, 'available', 60_000);
    expect((await claimOf(id))?.spec).toMatchObject({ storageClassName: FIXED, volumeName: 'nfs-fixed-1' });

    expect((await t.api('PATCH', `/api/v1/file-storage/${id}`, { size_gb: 60 })).status).toBe(200);
    const refused = await eventually(
      async () => {
        const record = (await t.api('GET', `/api/v1/file-storage/${id}`)).body.data;
        return record.status_reason ? record : null;
      },
      60_000,
      200,
    );
    expect(refused.status).toBe('available');
    expect(refused.status_reason).toMatch(/^The last configuration change was not applied: .*HTTP 403: .*(resize|expan)/i);
    expect((await claimOf(id))?.spec?.resources?.requests?.storage).toBe('20Gi');
    // A refusal is an answer of the API server, not a failure of it.
    expect((await t.api('GET', `/api/v1/file-storage/${id}`)).body.meta.provider).toBe('connected');
    // Nor is it work under way: the share is not looked at again every second until the driver's retry is due.
    // (An upper bound on passes: a loaded machine makes fewer of them, never more.)
    const before = await fileSharePasses();
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect((await fileSharePasses()) - before).toBeLessThanOrEqual(2);
  });

  it("made only calls the chart grants, none refused by RBAC (the refused growth above is the admission plugin's)", () => {
    const calls = expectOnlyListedCalls(cluster);
    const onClaims = new Set(calls.filter((c) => c.resource === 'persistentvolumeclaims' && c.namespace === namespace).map((c) => c.verb));
    // A server-side apply that makes the claim is a patch (the API server checks create with it).
    expect([...onClaims]).toEqual(expect.arrayContaining(['patch', 'get', 'delete']));
  });
});

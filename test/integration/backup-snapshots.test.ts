/**
 * The `kubernetes` backup driver (src/drivers/kubernetes/backup-snapshots.ts) against a real
 * kube-apiserver. The test API server has no snapshot API of its own: first the driver is
 * shown to take backups the simulated way where the cluster cannot snapshot; then the
 * snapshot.storage.k8s.io/v1 CRDs (VolumeSnapshotClass, VolumeSnapshot; minimal schemas,
 * written here from the documented API) and a class are installed, and the driver makes a
 * VolumeSnapshot of the claim the server's Pod mounts, owned by the ServerBackup.
 *
 * Not shown: a snapshot becoming readyToUse. That needs the snapshot-controller and a CSI
 * driver that can snapshot, which this machine cannot run; the test checks the backup stays
 * `pending` meanwhile rather than writing the controller's status itself.
 */
import { randomBytes } from 'node:crypto';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, V1CustomResourceDefinition } from '@kubernetes/client-node';
import pino from 'pino';
import { VolumeSnapshotBackupDriver, SNAPSHOT_GROUP } from '../../src/drivers/kubernetes/backup-snapshots';
import { SimulatedBackupDriver } from '../../src/drivers/simulated/backups';
import { Simulation } from '../../src/drivers/simulated/simulation';
import type { BackupSubject } from '../../src/drivers/backup';
import { startKubeApiServer, KubeApiServer } from '../helpers/kube-apiserver';
import { installCrds, kubeConfigOf } from '../helpers/cluster';
import { eventually } from '../helpers/service';

const SYSTEM_NAMESPACE = 'cloudplane-system';
const SUFFIX = randomBytes(8).toString('hex');
const TEAM = `team_${SUFFIX}`;
const NAMESPACE = `team-${SUFFIX}`;
const ID_LABELS = (id: string) => ({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });

/** A minimal CRD of the snapshot API: the fields of the documented v1 API that matter here. */
function snapshotCrd(kind: string, plural: string, scope: 'Namespaced' | 'Cluster'): V1CustomResourceDefinition {
  const str = { type: 'string' };
  const schema =
    kind === 'VolumeSnapshot'
      ? {
          type: 'object',
          properties: {
            spec: {
              type: 'object',
              required: ['source'],
              properties: {
                volumeSnapshotClassName: str,
                source: { type: 'object', properties: { persistentVolumeClaimName: str, volumeSnapshotContentName: str } },
              },
            },
            status: {
              type: 'object',
              properties: {
                boundVolumeSnapshotContentName: str,
                creationTime: str,
                readyToUse: { type: 'boolean' },
                restoreSize: str,
                error: { type: 'object', properties: { message: str, time: str } },
              },
            },
          },
        }
      : {
          type: 'object',
          properties: {
            driver: str,
            deletionPolicy: { type: 'string', enum: ['Delete', 'Retain'] },
            parameters: { type: 'object', additionalProperties: str },
          },
          required: ['driver', 'deletionPolicy'],
        };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    // A *.k8s.io group needs this annotation; a copy written for a test is honestly unapproved.
    metadata: {
      name: `${plural}.${SNAPSHOT_GROUP}`,
      annotations: { 'api-approved.kubernetes.io': 'unapproved, a minimal test copy of the kubernetes-csi/external-snapshotter API' },
    },
    spec: {
      group: SNAPSHOT_GROUP,
      scope,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema as never },
          ...(kind === 'VolumeSnapshot' ? { subresources: { status: {} } } : {}),
        },
      ],
    },
  };
}

describe('backup driver: VolumeSnapshots', () => {
  let cluster: KubeApiServer;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let driver: VolumeSnapshotBackupDriver;

  beforeAll(async () => {
    cluster = await startKubeApiServer();
    await installCrds(cluster);
    const kubeConfig = kubeConfigOf(cluster);
    core = kubeConfig.makeApiClient(CoreV1Api);
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const sim = new Simulation({ delayMs: 50, delays: {}, failures: {} });
    driver = new VolumeSnapshotBackupDriver({
      kubeConfig,
      systemNamespace: SYSTEM_NAMESPACE,
      logger: pino({ level: 'silent' }),
      fallback: new SimulatedBackupDriver(sim),
    });
  }, 120_000);
  afterAll(async () => cluster?.stop());

  /** A server's Pod as the Pod server driver makes it, mounting `claims`. */
  async function serverPod(claims: string[]): Promise<string> {
    const id = `svr_${randomBytes(8).toString('hex')}`;
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: id.replace('_', '-'), labels: ID_LABELS(id) },
        spec: {
          containers: [{ name: 'server', image: 'ubuntu:24.04', volumeMounts: claims.map((c) => ({ name: c, mountPath: `/mnt/${c}` })) }],
          volumes: claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
        },
      },
    });
    return id;
  }

  /** A backup of `serverId`, owned by a real ServerBackup custom resource. */
  async function backupOf(serverId: string): Promise<BackupSubject> {
    const id = `bkp_${randomBytes(8).toString('hex')}`;
    const cr = (await custom.createNamespacedCustomObject({
      group: 'cloudplane.dev',
      version: 'v1alpha1',
      plural: 'serverbackups',
      namespace: NAMESPACE,
      body: {
        apiVersion: 'cloudplane.dev/v1alpha1',
        kind: 'ServerBackup',
        metadata: { name: id.replace('_', '-'), labels: { 'cloudplane.dev/id': id } },
        spec: { name: 'b', server_id: serverId, trigger: 'manual', restore_requests: 0 },
      },
    })) as { metadata: { name: string; uid: string } };
    return {
      id,
      team: TEAM,
      source_id: serverId,
      external: null,
      owner: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'ServerBackup', name: cr.metadata.name, uid: cr.metadata.uid },
    };
  }

  it('takes the backup the simulated way without the snapshot API, and for a server without claims', async () => {
    const withClaim = await backupOf(await serverPod(['data-1']));
    const noApi = await driver.start(withClaim);
    expect(noApi).toMatchObject({ method: 'simulated', fallback_reason: 'the cluster has no VolumeSnapshotClass' });
    const done = await eventually(async () => {
      const progress = await driver.observe({ ...withClaim, external: noApi });
      return progress.state === 'succeeded' ? progress : null;
    });
    expect(done).toEqual({ state: 'succeeded' });

    const stopped = await driver.start(await backupOf('svr_0000000000000000'));
    expect(stopped).toMatchObject({ method: 'simulated', fallback_reason: 'the server mounts no PersistentVolumeClaim' });
  });

  it("makes a VolumeSnapshot of each claim of the server with the cluster's class, and deletes it on release", async () => {
    const ext = kubeConfigOf(cluster).makeApiClient(ApiextensionsV1Api);
    for (const crd of [
      snapshotCrd('VolumeSnapshotClass', 'volumesnapshotclasses', 'Cluster'),
      snapshotCrd('VolumeSnapshot', 'volumesnapshots', 'Namespaced'),
    ]) {
      await ext.createCustomResourceDefinition({ body: crd });
      await eventually(async () =>
        (await ext.readCustomResourceDefinition({ name: crd.metadata!.name! })).status?.conditions?.some(
          (c) => c.type === 'Established' && c.status === 'True',
        ),
      );
    }
    // Still no class: simulated.
    const early = await backupOf(await serverPod(['early']));
    expect(await driver.start(early)).toMatchObject({ method: 'simulated', fallback_reason: 'the cluster has no VolumeSnapshotClass' });

    for (const [name, isDefault] of [
      ['a-other', false],
      ['csi-snapshots', true],
    ] as const) {
      await custom.createClusterCustomObject({
        group: SNAPSHOT_GROUP,
        version: 'v1',
        plural: 'volumesnapshotclasses',
        body: {
          apiVersion: `${SNAPSHOT_GROUP}/v1`,
          kind: 'VolumeSnapshotClass',
          metadata: { name, annotations: isDefault ? { 'snapshot.storage.kubernetes.io/is-default-class': 'true' } : {} },
          driver: 'hostpath.csi.k8s.io',
          deletionPolicy: 'Delete',
        },
      });
    }
    const server = await serverPod(['disk-a', 'disk-b']);
    const backup = await backupOf(server);
    const record = await driver.start(backup);
    const name = backup.id.replace('_', '-');
    expect(record).toEqual({
      method: 'volume_snapshot',
      snapshot_class: 'csi-snapshots',
      namespace: NAMESPACE,
      snapshots: [
        { name: `${name}-0`, claim: 'disk-a' },
        { name: `${name}-1`, claim: 'disk-b' },
      ],
    });
    for (const [i, claim] of ['disk-a', 'disk-b'].entries()) {
      const snapshot = (await custom.getNamespacedCustomObject({
        group: SNAPSHOT_GROUP,
        version: 'v1',
        plural: 'volumesnapshots',
        namespace: NAMESPACE,
        name: `${name}-${i}`,
      })) as any;
      expect(snapshot.spec).toEqual({ volumeSnapshotClassName: 'csi-snapshots', source: { persistentVolumeClaimName: claim } });
      expect(snapshot.metadata.labels).toMatchObject(ID_LABELS(backup.id));
      expect(snapshot.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'ServerBackup', name, uid: backup.owner!.uid, controller: true })]);
    }
    // No snapshot controller here: the snapshots never become ready, and the backup stays pending.
    expect(await driver.observe({ ...backup, external: record })).toEqual({ state: 'pending', pollAfterMs: expect.any(Number) });

    expect(await driver.release({ ...backup, external: record })).toBe(true);
    const left = (await custom.listNamespacedCustomObject({
      group: SNAPSHOT_GROUP,
      version: 'v1',
      plural: 'volumesnapshots',
      namespace: NAMESPACE,
      labelSelector: `cloudplane.dev/id=${backup.id}`,
    })) as any;
    expect(left.items).toEqual([]);
    // Gone from under the backup: failed, not pending forever.
    expect(await driver.observe({ ...backup, external: record })).toEqual({ state: 'failed', reason: expect.stringContaining('is gone') });
  });
});

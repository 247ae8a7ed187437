/**
 * Backups as VolumeSnapshots (snapshot.storage.k8s.io/v1): a backup of a server whose Pod
 * mounts PersistentVolumeClaims is one VolumeSnapshot of each claim, in the team's
 * namespace, of the cluster's VolumeSnapshotClass (the one annotated as default, else the
 * first by name), labelled and owned like every object a driver makes. It is complete once
 * the cluster's snapshot controller marks every snapshot readyToUse, and failed when one
 * reports an error.
 *
 * Where the cluster has no snapshot class (or no snapshot API at all), or the server has no
 * claim to snapshot (a stopped server has no Pod; a server without file shares mounts none),
 * the backup is taken by the simulated driver instead, decided per backup at its start and
 * recorded as its `method`.
 *
 * Restoring a VolumeSnapshot would mean a claim made from it (dataSource) mounted in the
 * server's Pod in place of the original: the server driver does not do that yet, so the
 * restore of such a backup fails with that reason instead of pretending.
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { BackupDriver, BackupSubject, OperationProgress } from '../backup';
import type { DriverHealth, ExternalRecord } from '../types';
import { OutcomeWindow } from '../health';
import { isRecord } from '../../lib/unknown-values';
import { callApi, madeFor, managedLabels, ownerReferencesOf, placementOf } from './objects';

export const SNAPSHOT_GROUP = 'snapshot.storage.k8s.io';
export const SNAPSHOT_VERSION = 'v1';
export const DEFAULT_CLASS_ANNOTATION = 'snapshot.storage.kubernetes.io/is-default-class';
const POLL_MS = 2_000;

export interface VolumeSnapshotBackupOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** Takes the backups the cluster cannot snapshot. */
  fallback: BackupDriver;
}

/** What this driver records of a VolumeSnapshot backup. */
interface SnapshotRecord {
  method: 'volume_snapshot';
  snapshot_class: string;
  namespace: string;
  snapshots: Array<{ name: string; claim: string }>;
}

interface VolumeSnapshotObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  status?: { readyToUse?: boolean; error?: { message?: string } };
}

const isSnapshotRecord = (external: ExternalRecord | null): boolean => external?.method === 'volume_snapshot';

/**
 * Where a VolumeSnapshot backup's snapshots are, from its record; null for a backup the
 * fallback took. Read leniently (anyone with kubectl could have edited the record): one
 * that says it is a snapshot record but does not say where its snapshots are is refused.
 */
function recordedSnapshots(external: ExternalRecord | null): Pick<SnapshotRecord, 'namespace' | 'snapshots'> | null {
  if (!external || !isSnapshotRecord(external)) return null;
  const { namespace, snapshots } = external;
  const named = Array.isArray(snapshots)
    ? snapshots.flatMap((s) => (isRecord(s) && typeof s.name === 'string' && typeof s.claim === 'string' ? [{ name: s.name, claim: s.claim }] : []))
    : [];
  if (typeof namespace !== 'string' || !Array.isArray(snapshots) || named.length !== snapshots.length) {
    throw new Error("the backup's VolumeSnapshot record does not say where its snapshots are");
  }
  return { namespace, snapshots: named };
}

export class VolumeSnapshotBackupDriver implements BackupDriver {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly outcomes = new OutcomeWindow();

  constructor(private readonly o: VolumeSnapshotBackupOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.custom = o.kubeConfig.makeApiClient(CustomObjectsApi);
  }

  async start(backup: BackupSubject): Promise<ExternalRecord> {
    const claims = await this.claimsOf(backup);
    const snapshotClass = claims.length > 0 ? await this.snapshotClass() : null;
    if (!snapshotClass) {
      const why = claims.length === 0 ? 'the server mounts no PersistentVolumeClaim' : 'the cluster has no VolumeSnapshotClass';
      this.o.logger.info({ backup: backup.id, server: backup.source_id, why }, 'backup taken by the simulated driver');
      return { ...(await this.o.fallback.start(backup)), fallback_reason: why };
    }
    const { namespace, name } = placementOf(backup, this.o.systemNamespace);
    const snapshots = claims.map((claim, i) => ({ name: `${name}-${i}`, claim }));
    for (const snapshot of snapshots) {
      const body = {
        apiVersion: `${SNAPSHOT_GROUP}/${SNAPSHOT_VERSION}`,
        kind: 'VolumeSnapshot',
        metadata: { name: snapshot.name, namespace, labels: managedLabels(backup.id), ownerReferences: ownerReferencesOf(backup.owner) },
        spec: { volumeSnapshotClassName: snapshotClass, source: { persistentVolumeClaimName: snapshot.claim } },
      };
      // API call: backup driver: VolumeSnapshots (made, and below read and deleted)
      await callApi(
        this.outcomes,
        `create VolumeSnapshot ${namespace}/${snapshot.name}`,
        () => this.custom.createNamespacedCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, plural: 'volumesnapshots', namespace, body }),
        409,
      );
    }
    const record: SnapshotRecord = { method: 'volume_snapshot', snapshot_class: snapshotClass, namespace, snapshots };
    return { ...record };
  }

  async observe(backup: BackupSubject): Promise<OperationProgress> {
    const record = recordedSnapshots(backup.external);
    if (!record) return this.o.fallback.observe(backup);
    for (const snapshot of record.snapshots) {
      const live = await this.readSnapshot(record.namespace, snapshot.name);
      if (!live || !madeFor(live.metadata, backup.id)) return { state: 'failed', reason: `the VolumeSnapshot ${record.namespace}/${snapshot.name} is gone` };
      const error = live.status?.error?.message;
      if (error) return { state: 'failed', reason: `the VolumeSnapshot of claim ${snapshot.claim} failed: ${error}` };
      // Ready only once the cluster's snapshot controller says so; nothing here claims it.
      if (live.status?.readyToUse !== true) return { state: 'pending', pollAfterMs: POLL_MS };
    }
    return { state: 'succeeded' };
  }

  async startRestore(backup: BackupSubject, startedAt: string): Promise<ExternalRecord> {
    if (!isSnapshotRecord(backup.external)) return this.o.fallback.startRestore(backup, startedAt);
    return { ...backup.external, restore_started_at: startedAt };
  }

  async observeRestore(backup: BackupSubject): Promise<OperationProgress> {
    if (!isSnapshotRecord(backup.external)) return this.o.fallback.observeRestore(backup);
    return {
      state: 'failed',
      reason: 'restoring a VolumeSnapshot onto a server is not supported by the kubernetes server driver yet (it would mount a claim made from the snapshot)',
    };
  }

  async release(backup: BackupSubject): Promise<boolean> {
    const record = recordedSnapshots(backup.external);
    if (!record) return this.o.fallback.release(backup);
    for (const snapshot of record.snapshots) {
      // API call: backup driver: VolumeSnapshots
      await callApi(
        this.outcomes,
        `delete VolumeSnapshot ${record.namespace}/${snapshot.name}`,
        () =>
          this.custom.deleteNamespacedCustomObject({
            group: SNAPSHOT_GROUP,
            version: SNAPSHOT_VERSION,
            plural: 'volumesnapshots',
            namespace: record.namespace,
            name: snapshot.name,
          }),
        404,
      );
    }
    return true;
  }

  health(): DriverHealth {
    const own = this.outcomes.health();
    return own.state === 'connected' ? this.o.fallback.health() : own;
  }

  /** The claims the server's Pod mounts (servers/server-pods.ts names the Pod after the server); none without a Pod. */
  private async claimsOf(backup: BackupSubject): Promise<string[]> {
    const { namespace, name } = placementOf({ id: backup.source_id, team: backup.team }, this.o.systemNamespace);
    // API call: drivers: Pods
    const answer = await callApi<V1Pod>(this.outcomes, `read Pod ${namespace}/${name}`, () => this.core.readNamespacedPod({ namespace, name }), 404);
    if (!answer.ok || !madeFor(answer.value.metadata, backup.source_id)) return [];
    return (answer.value.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));
  }

  /** The class to snapshot with: the default one, else the first by name; null without any (or without the snapshot API: 404). */
  private async snapshotClass(): Promise<string | null> {
    // API call: backup driver: VolumeSnapshotClasses
    const answer = await callApi<{ items?: Array<{ metadata?: { name?: string; annotations?: Record<string, string> } }> }>(
      this.outcomes,
      'list VolumeSnapshotClasses',
      () => this.custom.listClusterCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, plural: 'volumesnapshotclasses' }),
      404,
    );
    if (!answer.ok) return null;
    const classes = (answer.value.items ?? [])
      .flatMap(({ metadata }) => (metadata?.name ? [{ name: metadata.name, annotations: metadata.annotations }] : []))
      .sort((a, b) => a.name.localeCompare(b.name));
    const chosen = classes.find((c) => c.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true') ?? classes.at(0);
    return chosen?.name ?? null;
  }

  private async readSnapshot(namespace: string, name: string): Promise<VolumeSnapshotObject | null> {
    // API call: backup driver: VolumeSnapshots
    const answer = await callApi<VolumeSnapshotObject>(
      this.outcomes,
      `read VolumeSnapshot ${namespace}/${name}`,
      () => this.custom.getNamespacedCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, plural: 'volumesnapshots', namespace, name }),
      404,
    );
    return answer.ok ? answer.value : null;
  }
}

/**
 * The `kubernetes` file share driver: a share is a PersistentVolumeClaim in its team's
 * namespace, named after the share's id (`fs_abc` → `fs-abc`, objects.ts), ReadWriteMany,
 * asking for `size_gb` GiB of the configured StorageClass (CLOUDPLANE_FILE_SHARE_STORAGE_CLASS;
 * unset, the cluster's default class fills it in). Whatever provisions and binds volumes
 * of that class (an NFS CSI driver, CephFS, a cloud's file service) does the rest: the
 * share is available once the claim is Bound, and `mount_target` names the claim,
 * `<namespace>/<claim>`, which the server driver mounts into the Pods of attached servers.
 *
 * The claim is kept by server-side apply. The class is fixed at create (recorded in
 * status.external): a claim's class cannot change, so a later change of the setting
 * applies to new shares only. Growth patches the request; the API server refuses it for a
 * class without allowVolumeExpansion (its PersistentVolumeClaimResize admission), and that
 * refusal is the update's `rejected` reason while the share keeps working at its old
 * size. A refused size is asked again only after REFUSAL_RETRY_MS, or at once for another
 * size. Delete deletes the claim; it is gone once no Pod uses it any more (the claim's
 * protection finalizer), and the share is released then.
 *
 * A claim under the share's name that Cloudplane did not make for it is never touched:
 * the share fails, saying what is in the way.
 */
import { KubeConfig, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { FileShareDesired, FileShareDriver, FileShareOutputs } from '../storage';
import type { DriverHealth, ExternalRecord, Managed, Observation, Step } from '../types';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import { madeFor, managedLabels, ownerReferencesOf, Placement, placementOf } from './objects';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import { isRecord } from '../../lib/unknown-values';

const DEFAULT_POLL_MS = 2_000;
/** How long a refused expansion to a size waits before it is asked again. */
export const REFUSAL_RETRY_MS = 60_000;
/** The API server's answers to a refused change of a claim: forbidden by admission, invalid. */
const REFUSALS = [403, 422];

export interface FileShareClaimDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** The claims' StorageClass; undefined: the cluster's default. */
  storageClass?: string;
  /** How soon to look again while a claim waits for its volume (default 2 s). */
  pollMs?: number;
}

/** What the driver remembers of its own calls, in status.external. */
export interface FileShareClaimRecord {
  /** The class the claim was made with; null: the cluster's default. */
  storage_class: string | null;
  /** The last size the API server refused, why, and when. */
  refused: { size_gb: number; reason: string; at: string } | null;
}

type Share = Managed<FileShareDesired>;

/** The record as stored, read leniently: anyone with kubectl could have edited it. */
export function claimRecordOf(external: ExternalRecord | null): FileShareClaimRecord | null {
  if (!external) return null;
  const { refused } = external;
  const { size_gb, reason, at } = isRecord(refused) ? refused : {};
  const valid = typeof size_gb === 'number' && typeof reason === 'string' && typeof at === 'string';
  return {
    storage_class: typeof external.storage_class === 'string' ? external.storage_class : null,
    refused: valid ? { size_gb, reason, at } : null,
  };
}

const toExternal = (record: FileShareClaimRecord): ExternalRecord => ({ storage_class: record.storage_class, refused: record.refused ?? null });

export const requestOf = (sizeGb: number) => `${sizeGb}Gi`;

export class FileShareClaimDriver implements FileShareDriver {
  private readonly objects: AppliedObjects;
  private readonly pollMs: number;

  constructor(private readonly o: FileShareClaimDriverOptions) {
    this.objects = new AppliedObjects(o.kubeConfig);
    this.pollMs = o.pollMs ?? DEFAULT_POLL_MS;
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  /** Claims changed by others (bound, resized, deleted by hand) are looked at at once. */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['persistentvolumeclaims'], changed);
  }

  async observe(share: Share): Promise<Observation<FileShareOutputs, null>> {
    const placement = placementOf(share, this.o.systemNamespace);
    const claim = await this.objects.read<V1PersistentVolumeClaim>(header(placement));
    if (!claim) return { exists: false };
    const present = { exists: true as const, observed: null, outputs: { mount_target: `${placement.namespace}/${placement.name}` } };
    if (!madeFor(claim.metadata, share.id)) {
      return {
        ...present,
        upToDate: true,
        ready: false,
        outputs: null,
        failure: `a PersistentVolumeClaim ${placement.namespace}/${placement.name} that Cloudplane did not make for this file share is in the way`,
      };
    }
    const record = claimRecordOf(share.external) ?? this.newRecord();
    const upToDate = holdsDesired(claim, this.claimOf(share, placement, record));
    const bound = claim.status?.phase === 'Bound';
    const lost = claim.status?.phase === 'Lost' ? 'the claim lost its PersistentVolume' : null;
    const refused = record.refused?.size_gb === share.desired.size_gb && !upToDate ? record.refused.reason : null;
    return { ...present, upToDate, ready: bound, failure: lost, rejected: refused, pollAfterMs: bound && (upToDate || refused) ? undefined : this.pollMs };
  }

  async create(share: Share): Promise<Step> {
    return this.apply(share, claimRecordOf(share.external) ?? this.newRecord());
  }

  async update(share: Share): Promise<Step> {
    return this.apply(share, claimRecordOf(share.external) ?? this.newRecord());
  }

  async delete(share: Share): Promise<Step> {
    const placement = placementOf(share, this.o.systemNamespace);
    const claim = await this.objects.read<V1PersistentVolumeClaim>(header(placement));
    if (claim && madeFor(claim.metadata, share.id) && !claim.metadata?.deletionTimestamp) {
      await this.objects.delete(header(placement));
      this.o.logger.info({ file_share: share.id, namespace: placement.namespace, claim: placement.name }, 'file share claim deleted');
    }
    // A claim still mounted by a Pod waits for it (kubernetes.io/pvc-protection): look again.
    return { external: share.external ?? toExternal(this.newRecord()), pollAfterMs: this.pollMs };
  }

  private newRecord(): FileShareClaimRecord {
    return { storage_class: this.o.storageClass ?? null, refused: null };
  }

  /** Applies the claim; a size the API server refuses is recorded, and not asked again too soon. */
  private async apply(share: Share, record: FileShareClaimRecord): Promise<Step> {
    const placement = placementOf(share, this.o.systemNamespace);
    const existing = await this.objects.read<V1PersistentVolumeClaim>(header(placement));
    if (existing && !madeFor(existing.metadata, share.id)) return { external: toExternal(record) }; // someone else's: never touched
    const { refused } = record;
    if (refused && refused.size_gb === share.desired.size_gb && Date.now() - Date.parse(refused.at) < REFUSAL_RETRY_MS) {
      return { external: toExternal(record), pollAfterMs: REFUSAL_RETRY_MS - (Date.now() - Date.parse(refused.at)) };
    }
    const answer = await this.objects.apply(this.claimOf(share, placement, record), ...REFUSALS);
    if (!answer.ok) {
      this.o.logger.warn(
        { file_share: share.id, claim: placement.name, size_gb: share.desired.size_gb, reason: answer.message },
        'file share claim change refused',
      );
      return {
        external: toExternal({ ...record, refused: { size_gb: share.desired.size_gb, reason: answer.message, at: new Date().toISOString() } }),
        pollAfterMs: REFUSAL_RETRY_MS,
      };
    }
    if (!existing)
      this.o.logger.info(
        { file_share: share.id, namespace: placement.namespace, claim: placement.name, storage_class: record.storage_class },
        'file share claim created',
      );
    return { external: toExternal({ ...record, refused: null }), pollAfterMs: this.pollMs };
  }

  /** The claim as the driver keeps it: every field it sets. */
  private claimOf(share: Share, placement: Placement, record: FileShareClaimRecord): V1PersistentVolumeClaim & ObjectHeader {
    return {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      // No annotations: an empty map is not kept by the API server, and would never read back as applied.
      metadata: { name: placement.name, namespace: placement.namespace, labels: managedLabels(share.id), ownerReferences: ownerReferencesOf(share.owner) },
      spec: {
        accessModes: ['ReadWriteMany'],
        ...(record.storage_class ? { storageClassName: record.storage_class } : {}),
        resources: { requests: { storage: requestOf(share.desired.size_gb) } },
      },
    };
  }
}

function header(placement: Placement): ObjectHeader {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: placement.name, namespace: placement.namespace } };
}

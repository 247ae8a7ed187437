/**
 * Daily backup policies of servers and databases: at the policy's time of each day (UTC) a
 * backup of the source is made, and the policy's backups beyond the `retain` newest are
 * deleted. A second reconciler of the source's kind, beside the managed one, that only
 * reads the sources (their spec's `backup_policy`) and writes backups.
 *
 * The backup of a time has an id derived from the source and the time, the same for every
 * replica and after every restart, so it is made once however often its time is looked at.
 * Only the latest time that came since the policy was set is caught up, as a CronJob with a
 * starting deadline does. The length of a day is configuration
 * (CLOUDPLANE_BACKUP_POLICY_DAY_MS), so that a demo or a test can run a "day" in seconds.
 */
import { createHash } from 'node:crypto';
import { AlreadyExistsError, Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { Value } from '@sinclair/typebox/value';
import { Backup, backupFamily, BackupPolicy, BackupPolicySpec, BackupSpec, restorePending } from '../resources/backup';
import type { AnyFamily, Resource } from '../resources/family';
import { fieldOf } from '../lib/unknown-values';
import { sourceGone } from './backup';
import { listedArray } from '../store/listed';
import type { ReconcileResult, Reconciler } from './controller';

/** A source with a policy is looked at again at least this often, so a clock that jumps is noticed. */
const MAX_SLEEP_MS = 60_000;
const DAY_MS = 86_400_000;

/** The id of the backup of `sourceId` for the policy's time `scheduledAt`. */
export function policyBackupId(sourceId: string, scheduledAt: string): string {
  const digest = createHash('sha256').update(`${sourceId}@${scheduledAt}`).digest();
  let opaque = '';
  for (const byte of digest.subarray(0, 20)) opaque += '0123456789abcdefghijklmnopqrstuvwxyz'[byte % 36];
  return `${backupFamily.idPrefix}_${opaque}`;
}

/** The policy's times, `dayMs` apart, at `time` into each day: the last one at or before `now`. */
export function lastPolicyTime(policy: Pick<BackupPolicy, 'time'>, dayMs: number, now: number): number {
  const [hours, minutes] = policy.time.split(':').map(Number);
  const offset = Math.floor((((hours * 60 + minutes) * 60_000) / DAY_MS) * dayMs);
  return Math.floor((now - offset) / dayMs) * dayMs + offset;
}

/** The family whose resources have a `backup_policy`, and the backup field naming one of them. */
export interface PolicySource {
  family: AnyFamily;
  field: 'server_id' | 'database_id';
}

export class BackupPolicyReconciler implements Reconciler {
  readonly kind: string;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
    private readonly dayMs: number,
    private readonly source: PolicySource,
  ) {
    this.kind = source.family.kind;
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const resource = await this.store.get<object, Resource['status']>(this.kind, team, id);
    const policy = resource ? policyIn(resource) : undefined;
    if (!resource || sourceGone(resource) || !policy?.enabled || resource.status.status === 'failed') return;
    const now = Date.now();
    const due = lastPolicyTime(policy, this.dayMs, now);
    const since = Math.max(Date.parse(policy.since ?? resource.meta.createdAt), Date.parse(resource.meta.createdAt));
    // A source still being created is backed up at the next time.
    if (due >= since && resource.status.status !== 'creating') await this.backUp(resource, new Date(due).toISOString());
    await this.prune(resource, policy.retain);
    return { requeueAfterMs: Math.max(1, Math.min(due + this.dayMs - now, MAX_SLEEP_MS)) };
  }

  private async backUp(resource: Resource, scheduledAt: string): Promise<void> {
    const spec: BackupSpec = {
      name: `${this.source.family.nameOf(resource.spec)}-daily-${scheduledAt.replace(/[-:]|\.\d+Z$/g, '')}Z`,
      [this.source.field]: resource.meta.id,
      trigger: 'policy',
      scheduled_at: scheduledAt,
      restore_requests: 0,
    };
    try {
      await this.writer.create(backupFamily, resource.meta.team, spec, 'system', policyBackupId(resource.meta.id, scheduledAt));
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  }

  /** Deletes the policy's backups beyond the `retain` newest; manual ones are the owner's to delete. */
  private async prune(resource: Resource, retain: number): Promise<void> {
    // The source's backups alone, from the indexes; the deleted and destroyed ones a list leaves out are past pruning.
    const backups = await listedArray<Backup['spec'], Backup['status']>(this.store, backupFamily.kind, resource.meta.team, {
      where: { [this.source.field]: resource.meta.id },
    });
    const ofPolicy = backups
      .filter((b) => b.spec.trigger === 'policy' && !b.meta.deletionTimestamp)
      .sort((a, b) => (b.spec.scheduled_at ?? b.meta.createdAt).localeCompare(a.spec.scheduled_at ?? a.meta.createdAt));
    // One being restored is kept until the restore is over; the next look deletes it.
    const beyond = ofPolicy.slice(retain).filter((b) => !restorePending(b) && b.status.restore_state !== 'restoring');
    for (const old of beyond) await this.writer.requestDeletion(backupFamily, resource.meta.team, old.meta.id, 'system');
  }
}

/** A source's policy, as its spec keeps it (BackupPolicySpec); none when it has none, or one edited out of shape. */
function policyIn(resource: Resource): BackupPolicy | undefined {
  const policy = fieldOf(resource.spec, 'backup_policy');
  return Value.Check(BackupPolicySpec, policy) ? policy : undefined;
}

/**
 * Servers: the managed lifecycle, plus power. The actions only record what the owner
 * wants in the spec (power_state, reboot_requests), so a kubectl edit of those fields
 * works the same; the driver carries the wish out, and the power it observes is the
 * server's state. Attached file shares (spec.file_shares) are resolved to what the
 * driver mounts, as the load balancer binding resolves its backends' addresses.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { attachedShares, mountPathOf, Server, serverFamily } from '../resources/server';
import { fileShareFamily, FileShareStatus } from '../resources/storage';
import type { DesiredMount, PowerState, ServerDesired, ServerDriver, ServerObserved, ServerOutputs } from '../drivers/server';
import { Backup, backupFamily, restorePending } from '../resources/backup';
import { listedObjects } from '../store/listed';

const STATE_OF_POWER: Record<PowerState, string> = { on: 'running', off: 'stopped', stopping: 'stopping', starting: 'starting', rebooting: 'rebooting' };

/**
 * What the server reconciler works from: what its driver is asked for, and whether a backup
 * is being restored onto it (the backup controller does that work; the server is `restoring`
 * meanwhile, so it cannot be stopped, changed or deleted under the restore).
 */
type ServerWanted = ServerDesired & { restoring: boolean };

/** Whether a restore of one of the server's backups is asked for or under way. */
async function restoringOnto(store: Store, team: string, serverId: string): Promise<boolean> {
  // The server's completed backups alone, from the indexes: this runs on every reconcile of a server.
  for await (const b of listedObjects<Backup['spec'], Backup['status']>(store, backupFamily.kind, team, {
    status: 'completed',
    where: { server_id: serverId },
  })) {
    if (!b.meta.deletionTimestamp && (restorePending(b) || b.status.restore_state === 'restoring')) return true;
  }
  return false;
}

export function serverBinding(driver: ServerDriver, store: Store): FamilyBinding<ServerWanted, ServerOutputs, ServerObserved, Server> {
  /** An attached share while it is available (and not being deleted); null otherwise: nothing to mount yet, or any more. */
  const mountOf = async (team: string, id: string): Promise<DesiredMount | null> => {
    const share = await store.get<unknown, FileShareStatus>(fileShareFamily.kind, team, id);
    if (!share || share.meta.deletionTimestamp || share.status.status !== 'available' || !share.status.mount_target) return null;
    return { file_share_id: id, mount_target: share.status.mount_target, mount_path: mountPathOf(id) };
  };

  return {
    family: serverFamily,
    readyState: 'running',
    driver,
    async desired(server) {
      const mounts = await Promise.all(attachedShares(server.spec).map((id) => mountOf(server.meta.team, id)));
      const restoring = await restoringOnto(store, server.meta.team, server.meta.id);
      return { ...server.spec, mounts: mounts.filter((m): m is DesiredMount => m !== null), restoring };
    },
    outputs: ({ ipv4 }) => ({ ipv4 }),
    steady: ({ power, reboots_done }, _resource, { restoring }) => ({
      state: restoring && power === 'on' ? 'restoring' : STATE_OF_POWER[power],
      changes: { reboots_done },
    }),
    watchRelated(changed) {
      // A restore asked for, begun or ended moves the server into or out of `restoring`.
      return store.watch(({ object }) => {
        const serverId = object.spec.server_id;
        if (object.meta.kind === backupFamily.kind && typeof serverId === 'string') changed(object.meta.team, serverId);
      });
    },
  };
}

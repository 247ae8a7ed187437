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

const STATE_OF_POWER: Record<PowerState, string> = { on: 'running', off: 'stopped', stopping: 'stopping', starting: 'starting', rebooting: 'rebooting' };

export function serverBinding(driver: ServerDriver, store: Store): FamilyBinding<ServerDesired, ServerOutputs, ServerObserved> {
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
    async desired(resource) {
      const server = resource as unknown as Server;
      const mounts = await Promise.all(attachedShares(server.spec).map((id) => mountOf(server.meta.team, id)));
      return { ...server.spec, mounts: mounts.filter((m): m is DesiredMount => m !== null) };
    },
    outputs: ({ ipv4 }) => ({ ipv4 }),
    steady: ({ power, reboots_done }) => ({ state: STATE_OF_POWER[power], changes: { reboots_done } }),
  };
}

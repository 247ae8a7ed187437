/**
 * The server driver's contract. A server is a machine the owner can power off and on and
 * reboot: the spec says what is wanted (power_state, reboot_requests) and a driver
 * converges to it. The simulated driver plays a hypervisor; a Pod driver runs a server as
 * a Pod (stop removes it, start brings it back, reboot replaces it); a KubeVirt driver
 * would drive a VirtualMachine's run strategy and restarts. Each is a second
 * implementation of this interface, not a change to the reconciler.
 */
import type { ServerSpec } from '../resources/server';
import type { Driver } from './types';

/** An attached file share, as the server binding resolved it. */
export interface DesiredMount {
  file_share_id: string;
  /** The share's mount_target as its driver gave it (a claim's `<namespace>/<name>`, an NFS `host:/path`). */
  mount_target: string;
  /** Where it appears in the server's file system. */
  mount_path: string;
}

/**
 * What a server driver is asked for: the spec as the owner wrote it, and the attached
 * file shares that are available, resolved to what to mount. A driver mounts what it can
 * reach (the Pod driver: claims in the server's namespace).
 */
export type ServerDesired = ServerSpec & { mounts: DesiredMount[] };

export interface ServerOutputs {
  /** The server's address; null while it has none (a stopped Pod). */
  ipv4: string | null;
}

/** Power as the driver sees it: settled (`on`, `off`) or moving. */
export type PowerState = 'on' | 'off' | 'stopping' | 'starting' | 'rebooting';

export interface ServerObserved {
  power: PowerState;
  /** How many of the spec's reboot_requests have been carried out (a stop and start settles them all). */
  reboots_done: number;
}

export type ServerDriver = Driver<ServerDesired, ServerOutputs, ServerObserved>;

/**
 * Servers: the managed lifecycle, plus power. The actions only record what the owner
 * wants in the spec (power_state, reboot_requests), so a kubectl edit of those fields
 * works the same; the driver carries the wish out, and the power it observes is the
 * server's state.
 */
import type { FamilyBinding } from './managed';
import { serverFamily } from '../resources/server';
import type { PowerState, ServerDesired, ServerDriver, ServerObserved, ServerOutputs } from '../drivers/server';

const STATE_OF_POWER: Record<PowerState, string> = { on: 'running', off: 'stopped', stopping: 'stopping', starting: 'starting', rebooting: 'rebooting' };

export function serverBinding(driver: ServerDriver): FamilyBinding<ServerDesired, ServerOutputs, ServerObserved> {
  return {
    family: serverFamily,
    readyState: 'running',
    driver,
    desired: async (server) => server.spec as ServerDesired,
    outputs: ({ ipv4 }) => ({ ipv4 }),
    steady: ({ power, reboots_done }) => ({ state: STATE_OF_POWER[power], changes: { reboots_done } }),
  };
}

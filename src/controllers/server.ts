/**
 * Servers: the shared lifecycle plus the power moves. The actions only record what the
 * owner wants in the spec (power_state, reboot_requests), so a kubectl edit of those
 * fields works the same; this reconciler carries the wish out through the provider.
 */
import { LifecycleReconciler, LifecycleOptions, Operated } from './lifecycle';
import { serverFamily } from '../resources/server';

/** A finished stop or start also settles reboots asked for before it. */
const settleReboots = (server: Operated) => ({ reboots_done: server.spec.reboot_requests ?? 0 });

export function serverReconciler(base: Omit<LifecycleOptions, 'family' | 'readyState' | 'moves'>): LifecycleReconciler {
  return new LifecycleReconciler({
    ...base,
    family: serverFamily,
    readyState: 'running',
    moves: [
      { from: 'running', via: 'stopping', to: 'stopped', operation: 'power_off', wanted: (s) => s.spec.power_state === 'off', done: settleReboots },
      { from: 'stopped', via: 'starting', to: 'running', operation: 'power_on', wanted: (s) => s.spec.power_state === 'on', done: settleReboots },
      {
        from: 'running',
        via: 'rebooting',
        to: 'running',
        operation: 'reboot',
        wanted: (s) => (s.spec.reboot_requests ?? 0) > ((s.status as unknown as { reboots_done?: number }).reboots_done ?? 0),
        done: settleReboots,
      },
    ],
  });
}

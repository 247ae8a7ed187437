/**
 * VPN gateways: the shared lifecycle (deleted in the background through `deleting`), and
 * while active, the tunnel's state and counters copied from the provider into the status
 * now and then, so lists show recent figures (GET .../status reads them live).
 *
 * Counters grow with every look, and each status write brings the next reconcile through
 * the watch: they are written at most once an interval (a tunnel going up or down at
 * once), or the gateway would rewrite itself without pause and starve other writers.
 */
import { LifecycleReconciler, LifecycleOptions } from './lifecycle';
import { vpnGatewayFamily, VpnGateway } from '../resources/vpn-gateway';
import { nowIso } from '../lib/time';

const TUNNEL_OBSERVE_INTERVAL_MS = 30_000;

export function vpnGatewayReconciler(base: Omit<LifecycleOptions, 'family' | 'readyState' | 'steady'>): LifecycleReconciler {
  return new LifecycleReconciler({
    ...base,
    family: vpnGatewayFamily,
    readyState: 'active',
    outputs: (outputs) => ({
      local_ip: outputs.local_ip ?? null,
      public_key: outputs.public_key ?? null,
      active_since: nowIso(),
      tunnel_status: 'up',
    }),
    steady: async (resource) => {
      const gateway = resource as unknown as VpnGateway;
      const since = gateway.status.active_since ?? gateway.meta.createdAt;
      const stats = await base.provider.tunnelStats(gateway.meta.id, since);
      const { status } = gateway;
      const flipped = stats.tunnel_status !== status.tunnel_status;
      const moved = stats.bytes_sent !== status.bytes_sent || stats.bytes_received !== status.bytes_received || stats.last_handshake !== status.last_handshake;
      const sinceWrite = Date.now() - Date.parse(gateway.meta.updatedAt);
      if (flipped || (moved && sinceWrite >= TUNNEL_OBSERVE_INTERVAL_MS)) return { changes: { ...stats }, requeueAfterMs: TUNNEL_OBSERVE_INTERVAL_MS };
      return { changes: null, requeueAfterMs: Math.max(1, Math.min(TUNNEL_OBSERVE_INTERVAL_MS, TUNNEL_OBSERVE_INTERVAL_MS - sinceWrite)) };
    },
  });
}

/**
 * VPN gateways: the managed lifecycle (deleted in the background through `deleting`),
 * and while active, the tunnel's state and counters copied from the driver into the
 * status now and then, so lists show recent figures (GET .../status reads them live).
 *
 * Counters grow with every look, and each status write brings the next reconcile through
 * the watch: they are written at most once an interval (a tunnel going up or down at
 * once), or the gateway would rewrite itself without pause and starve other writers.
 */
import type { FamilyBinding } from './managed';
import { vpnGatewayFamily, VpnGateway } from '../resources/vpn-gateway';
import type { TunnelStats, VpnGatewayDesired, VpnGatewayDriver, VpnGatewayOutputs } from '../drivers/vpn-gateway';
import { nowIso } from '../lib/time';

const TUNNEL_OBSERVE_INTERVAL_MS = 30_000;

export function vpnGatewayBinding(driver: VpnGatewayDriver): FamilyBinding<VpnGatewayDesired, VpnGatewayOutputs, TunnelStats> {
  return {
    family: vpnGatewayFamily,
    readyState: 'active',
    driver,
    desired: async (gateway) => gateway.spec as VpnGatewayDesired,
    outputs: ({ local_ip, public_key }) => ({ local_ip, public_key }),
    onReady: () => ({ active_since: nowIso(), tunnel_status: 'up' }),
    steady: (stats, resource) => {
      const { status, meta } = resource as unknown as VpnGateway;
      const flipped = stats.tunnel_status !== status.tunnel_status;
      const moved = stats.bytes_sent !== status.bytes_sent || stats.bytes_received !== status.bytes_received || stats.last_handshake !== status.last_handshake;
      const sinceWrite = Date.now() - Date.parse(meta.updatedAt);
      if (flipped || (moved && sinceWrite >= TUNNEL_OBSERVE_INTERVAL_MS)) return { changes: { ...stats }, requeueAfterMs: TUNNEL_OBSERVE_INTERVAL_MS };
      return { requeueAfterMs: Math.max(1, Math.min(TUNNEL_OBSERVE_INTERVAL_MS, TUNNEL_OBSERVE_INTERVAL_MS - sinceWrite)) };
    },
  };
}

/**
 * VPN gateways: the managed lifecycle (deleted in the background through `deleting`),
 * and while active, the tunnel's state and counters copied from the driver into the
 * status now and then, so lists show recent figures (GET .../status reads them live).
 *
 * Counters grow with every look, and each status write brings the next reconcile through
 * the watch: they are written at most once an interval (a tunnel going up or down at
 * once), or the gateway would rewrite itself without pause and starve other writers.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { vpnGatewayFamily, VpnGateway } from '../resources/vpn-gateway';
import type { TunnelStats, VpnGatewayDesired, VpnGatewayDriver, VpnGatewayOutputs } from '../drivers/vpn-gateway';
import { nowIso } from '../lib/time';
import { known } from '../lib/known';

/** The spec with the pre-shared key read from its store secret: the tunnel needs the key itself, the spec keeps only its version. */
export async function vpnGatewayDesired(store: Store, { meta, spec }: VpnGateway): Promise<VpnGatewayDesired> {
  const keySecret = known(vpnGatewayFamily.secret, 'the pre-shared key secret of a VPN gateway');
  const secret = await store.secrets.get(meta.team, keySecret.secretName(meta.id));
  return { ...spec, remote_public_key: spec.remote_public_key ?? null, pre_shared_key: secret?.value ?? null };
}

/** `counterIntervalMs`: how often at most moving counters are written (CLOUDPLANE_VPN_COUNTER_INTERVAL_SECONDS). */
export function vpnGatewayBinding(
  driver: VpnGatewayDriver,
  store: Store,
  counterIntervalMs: number,
): FamilyBinding<VpnGatewayDesired, VpnGatewayOutputs, TunnelStats, VpnGateway> {
  return {
    family: vpnGatewayFamily,
    readyState: 'active',
    driver,
    desired: (resource) => vpnGatewayDesired(store, resource),
    outputs: ({ local_ip, public_key }) => ({ local_ip, public_key }),
    // The tunnel as the driver sees it: a WireGuard gateway without its peer's key is active with its tunnel down.
    onReady: (stats) => ({ active_since: nowIso(), ...stats }),
    steady: (stats, { status, meta }) => {
      const flipped = stats.tunnel_status !== status.tunnel_status;
      const moved = stats.bytes_sent !== status.bytes_sent || stats.bytes_received !== status.bytes_received || stats.last_handshake !== status.last_handshake;
      const sinceWrite = Date.now() - Date.parse(meta.updatedAt);
      if (flipped || (moved && sinceWrite >= counterIntervalMs)) return { changes: { ...stats }, requeueAfterMs: counterIntervalMs };
      return { requeueAfterMs: Math.max(1, Math.min(counterIntervalMs, counterIntervalMs - sinceWrite)) };
    },
  };
}

/** The VPN gateway driver's contract: an address and (WireGuard) a public key once active, and the tunnel's live state. */
import type { VpnGatewaySpec } from '../resources/vpn-gateway';
import type { Driver } from './types';

/**
 * What the driver is asked for: the spec, with the pre-shared key resolved from its store
 * secret (null when there is none, as for WireGuard). The key is for the tunnel's own
 * configuration only: a driver never returns it in what it records, logs or reports.
 */
export type VpnGatewayDesired = VpnGatewaySpec & { remote_public_key: string | null; pre_shared_key: string | null };

export interface VpnGatewayOutputs {
  local_ip: string | null;
  public_key: string | null;
}

/** The tunnel as GET /vpn-gateways/{id}/status shows it. */
export interface TunnelStats {
  tunnel_status: 'up' | 'down';
  bytes_sent: number;
  bytes_received: number;
  last_handshake: string | null;
}

export type VpnGatewayDriver = Driver<VpnGatewayDesired, VpnGatewayOutputs, TunnelStats>;

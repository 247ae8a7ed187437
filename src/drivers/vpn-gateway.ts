/** The VPN gateway driver's contract: an address and (WireGuard) a public key once active, and the tunnel's live state. */
import type { VpnGatewaySpec } from '../resources/vpn-gateway';
import type { Driver } from './types';

export type VpnGatewayDesired = VpnGatewaySpec;

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

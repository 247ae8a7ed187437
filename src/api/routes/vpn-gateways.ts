/** VPN gateway actions: the live tunnel status. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { tunnelStatsSchema, vpnGatewayFamily as family, VpnGateway } from '../../resources/vpn-gateway';
import { managedOf } from '../../controllers/driven';
import { vpnGatewayDesired } from '../../controllers/vpn-gateway';
import type { ApiApp } from '../api-app';
import type { VpnGatewayDriver } from '../../drivers/vpn-gateway';
import { asStored } from '../../resources/family';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** `driver`: the gateways' driver in use, asked for the live tunnel state. */
export function registerVpnGatewayRoutes(app: ApiApp, ctx: ApiContext, driver: VpnGatewayDriver): void {
  app.get(`/api/v1/${family.path}/:id/status`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      // Not getVpnGatewayStatus: generators name the gateway's own `status` enum VpnGatewayStatus.
      operationId: 'getVpnTunnelStatus',
      summary: 'Live tunnel status',
      description: "Asks the gateway's driver for the tunnel state now. A gateway that is not active reports `down` with its last observed counters.",
      params: IdParams,
      response: { 200: envelopeOf(tunnelStatsSchema), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const gateway = await findResource<VpnGateway>(ctx, family, principalOf(request).team, id);
      const status = asStored(gateway.status);
      const last = {
        tunnel_status: 'down' as const,
        bytes_sent: status.bytes_sent ?? 0,
        bytes_received: status.bytes_received ?? 0,
        last_handshake: status.last_handshake ?? null,
      };
      if (status.status !== 'active') return send(ctx, request, reply, 200, last);
      // observe only reads: asking it from a request changes nothing the reconciler relies on.
      const observation = await driver.observe(managedOf(family, gateway, await vpnGatewayDesired(ctx.store, gateway)));
      return send(ctx, request, reply, 200, observation.exists ? observation.observed : last);
    },
  });
}

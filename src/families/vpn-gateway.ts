/** Site-to-site VPN gateways: a tunnel agent's Pod in cluster mode, simulated on the embedded default. */
import { vpnGatewayFamily } from '../resources/vpn-gateway';
import type { VpnGatewayDriver } from '../drivers/vpn-gateway';
import { SimulatedVpnGatewayDriver } from '../drivers/simulated/families';
import { VpnGatewayTunnelDriver } from '../drivers/kubernetes/vpn-gateway-tunnel';
import { vpnGatewayBinding } from '../controllers/vpn-gateway';
import { registerVpnGatewayRoutes } from '../api/routes/vpn-gateways';
import { drivenFamilyModule } from './module';

export const vpnGatewayModule = drivenFamilyModule<VpnGatewayDriver>({
  family: vpnGatewayFamily,
  drivers: {
    simulated: (ctx) => new SimulatedVpnGatewayDriver(ctx.simulation),
    kubernetes: (ctx) => {
      const { statusTimeoutMs, ...agent } = ctx.cluster.vpnGateways;
      return new VpnGatewayTunnelDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'vpn-gateway-driver' }),
        agent,
        statusTimeoutMs,
      });
    },
  },
  reconcilers: (deps, driver) => [deps.managed(vpnGatewayBinding(driver, deps.store, deps.config.tunnelCounterIntervalMs))],
  routes: (app, ctx, driver) => {
    registerVpnGatewayRoutes(app, ctx, driver);
  },
});

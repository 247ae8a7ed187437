/** Load balancers: HAProxy in the team's namespace in cluster mode, simulated on the embedded default. */
import { loadBalancerFamily } from '../resources/load-balancer';
import type { LoadBalancerDriver } from '../drivers/load-balancer';
import { SimulatedLoadBalancerDriver } from '../drivers/simulated/families';
import { HaproxyLoadBalancerDriver } from '../drivers/kubernetes/load-balancer-haproxy';
import { loadBalancerBinding } from '../controllers/load-balancer';
import { registerLoadBalancerRoutes } from '../api/routes/load-balancers';
import { drivenFamilyModule } from './module';

export const loadBalancerModule = drivenFamilyModule<LoadBalancerDriver>({
  family: loadBalancerFamily,
  drivers: {
    simulated: (ctx) => new SimulatedLoadBalancerDriver(ctx.simulation),
    kubernetes: (ctx) => {
      const { statsTimeoutMs, ...haproxy } = ctx.cluster.haproxy;
      return new HaproxyLoadBalancerDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'load-balancer-driver' }),
        haproxy,
        statsTimeoutMs,
      });
    },
  },
  reconcilers: (deps, driver) => [deps.managed(loadBalancerBinding(driver, deps.store, deps.config.backendDrainMs))],
  routes: (app, ctx, driver) => {
    registerLoadBalancerRoutes(app, ctx, driver);
  },
});

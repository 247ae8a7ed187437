/** Managed Kubernetes clusters: simulated on both stores for now (a cluster driver comes next). */
import { kubernetesClusterFamily } from '../resources/kubernetes-cluster';
import type { KubernetesClusterDriver } from '../drivers/kubernetes-cluster';
import { SimulatedKubernetesClusterDriver } from '../drivers/simulated/families';
import { kubernetesClusterBinding } from '../controllers/kubernetes-cluster';
import { registerKubernetesClusterRoutes } from '../api/routes/kubernetes-clusters';
import { drivenFamilyModule } from './module';

export const kubernetesClusterModule = drivenFamilyModule<KubernetesClusterDriver>({
  family: kubernetesClusterFamily,
  drivers: {
    simulated: (ctx) => new SimulatedKubernetesClusterDriver(ctx.simulation),
  },
  reconcilers: (deps, driver) => [deps.managed(kubernetesClusterBinding(driver, deps.store))],
  routes: (app, ctx) => {
    registerKubernetesClusterRoutes(app, ctx);
  },
});

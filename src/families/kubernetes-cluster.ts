/**
 * Managed Kubernetes clusters: real control planes on this machine on the embedded default
 * (the local driver, where etcd, kube-apiserver and kwok are found), simulated otherwise;
 * the cluster driver comes next.
 */
import { KUBERNETES_VERSIONS, kubernetesClusterFamily } from '../resources/kubernetes-cluster';
import { findKubernetes } from '../drivers/local/kube-install';
import { LocalKubernetesClusterDriver } from '../drivers/local/kubernetes-cluster';
import { BackgroundWork } from '../drivers/local/background-work';
import type { KubernetesClusterDriver } from '../drivers/kubernetes-cluster';
import { SimulatedKubernetesClusterDriver } from '../drivers/simulated/families';
import { kubernetesClusterBinding } from '../controllers/kubernetes-cluster';
import { registerKubernetesClusterRoutes } from '../api/routes/kubernetes-clusters';
import { drivenFamilyModule } from './module';

export const kubernetesClusterModule = drivenFamilyModule<KubernetesClusterDriver>({
  family: kubernetesClusterFamily,
  drivers: {
    simulated: (ctx) => new SimulatedKubernetesClusterDriver(ctx.simulation),
    local: ({ config, logger }) => {
      const install = findKubernetes(config.drivers.kubernetesBinPath, KUBERNETES_VERSIONS);
      if ('missing' in install) return install;
      const driver = new LocalKubernetesClusterDriver(
        install,
        config.drivers.localKubernetesDir,
        new BackgroundWork(logger.child({ component: 'local-kubernetes' })),
      );
      return { driver, found: driver.describe() };
    },
  },
  reconcilers: (deps, driver) => [deps.managed(kubernetesClusterBinding(driver, deps.store))],
  routes: (app, ctx) => {
    registerKubernetesClusterRoutes(app, ctx);
  },
});

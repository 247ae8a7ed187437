/**
 * Managed Kubernetes clusters: real control planes on this machine on the embedded default
 * (the local driver, where etcd, kube-apiserver and kwok are found), a hosted control plane
 * in the team's namespace in cluster mode (etcd, kube-apiserver, kube-controller-manager
 * and kube-scheduler as Pods, KWOK's nodes), simulated otherwise.
 */
import { KUBERNETES_VERSIONS, kubernetesClusterFamily } from '../resources/kubernetes-cluster';
import { findKubernetes } from '../drivers/local/kube-install';
import { LocalKubernetesClusterDriver } from '../drivers/local/kubernetes-cluster';
import { HostedKubernetesClusterDriver } from '../drivers/kubernetes/kubernetes-cluster-hosted';
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
    kubernetes: (ctx) =>
      new HostedKubernetesClusterDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'kubernetes-cluster-driver' }),
        settings: ctx.cluster.kubernetesClusters,
      }),
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

/** NFS file shares: PersistentVolumeClaims in cluster mode, simulated on the embedded default. */
import { fileShareFamily } from '../resources/storage';
import type { FileShareDriver } from '../drivers/storage';
import { simulatedFileShareDriver } from '../drivers/simulated/families';
import { FileShareClaimDriver } from '../drivers/kubernetes/file-share-claims';
import { fileShareBinding } from '../controllers/file-share';
import { registerFileShareRoutes } from '../api/routes/file-shares';
import { drivenFamilyModule } from './module';

export const fileShareModule = drivenFamilyModule<FileShareDriver>({
  family: fileShareFamily,
  drivers: {
    simulated: (ctx) => simulatedFileShareDriver(ctx.simulation),
    kubernetes: (ctx) =>
      new FileShareClaimDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'file-share-driver' }),
        storageClass: ctx.cluster.fileShareStorageClass,
      }),
  },
  reconcilers: (deps, driver) => [deps.managed(fileShareBinding(driver))],
  routes: (app, ctx) => {
    registerFileShareRoutes(app, ctx);
  },
});

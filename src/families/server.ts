/** Servers: Pods in the team's namespace in cluster mode, simulated on the embedded default; and their daily backups. */
import { serverFamily } from '../resources/server';
import type { ServerDriver } from '../drivers/server';
import { SimulatedServerDriver } from '../drivers/simulated/families';
import { PodServerDriver } from '../drivers/kubernetes/server-pods';
import { serverBinding } from '../controllers/server';
import { BackupPolicyReconciler } from '../controllers/backup-policy';
import { registerServerRoutes } from '../api/routes/servers';
import { drivenFamilyModule } from './module';

export const serverModule = drivenFamilyModule<ServerDriver>({
  family: serverFamily,
  drivers: {
    simulated: (ctx) => new SimulatedServerDriver(ctx.simulation),
    kubernetes: (ctx) =>
      new PodServerDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'server-driver' }),
        catalog: ctx.cluster.serverImages,
        plans: ctx.cluster.serverPlans,
        startTimeoutMs: ctx.cluster.serverStartTimeoutMs,
      }),
  },
  reconcilers: (deps, driver) => [
    deps.managed(serverBinding(driver, deps.store)),
    // Servers' daily backups: a second reconciler of servers, which only makes and prunes backups.
    new BackupPolicyReconciler(deps.store, deps.writer, deps.config.backupPolicyDayMs, { family: serverFamily, field: 'server_id' }),
  ],
  routes: (app, ctx) => {
    registerServerRoutes(app, ctx);
  },
});

/** Server backups and restores: VolumeSnapshots where the cluster can take them, simulated otherwise. */
import { backupFamily } from '../resources/backup';
import { serverFamily } from '../resources/server';
import type { BackupDriver } from '../drivers/backup';
import { SimulatedBackupDriver } from '../drivers/simulated/backups';
import { VolumeSnapshotBackupDriver } from '../drivers/kubernetes/backup-snapshots';
import { BackupReconciler } from '../controllers/backup';
import { registerBackupRoutes, registerServerRestoreRoute, SERVER_BACKUPS } from '../api/routes/backups';
import { drivenFamilyModule } from './module';

export const backupModule = drivenFamilyModule<BackupDriver>({
  family: backupFamily,
  drivers: {
    simulated: (ctx) => new SimulatedBackupDriver(ctx.simulation),
    // VolumeSnapshots where the cluster can take them; the simulated driver for the rest (decided per backup).
    kubernetes: (ctx) =>
      new VolumeSnapshotBackupDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        logger: ctx.logger.child({ component: 'backup-driver' }),
        fallback: new SimulatedBackupDriver(ctx.simulation),
      }),
  },
  reconcilers: (deps, driver) => [deps.adopt(backupFamily, new BackupReconciler(deps.store, deps.writer, driver, serverFamily))],
  routes: (app, ctx) => {
    registerBackupRoutes(app, ctx, SERVER_BACKUPS);
    registerServerRestoreRoute(app, ctx);
  },
});

/**
 * Managed PostgreSQL databases: a real PostgreSQL on this machine on the embedded default
 * (the local driver, where PostgreSQL is installed), a StatefulSet of PostgreSQL in the
 * team's namespace in cluster mode, or, named, a CloudNativePG Cluster (backups simulated
 * for now in both), simulated otherwise.
 */
import { databaseFamily, ownerOfUserPassword, PG_VERSIONS, USER_PASSWORD_PREFIX } from '../resources/database';
import { fieldOf } from '../lib/unknown-values';
import type { DatabaseDriver } from '../drivers/database';
import { SimulatedDatabaseDriver } from '../drivers/simulated/families';
import { SimulatedBackupDriver } from '../drivers/simulated/backups';
import { PostgresStatefulSetDriver } from '../drivers/kubernetes/database-statefulset';
import { CloudNativePgDatabaseDriver } from '../drivers/kubernetes/database-cloudnative-pg';
import { LocalDatabaseDriver } from '../drivers/local/database';
import { findPostgres } from '../drivers/local/postgres-install';
import { PostgresHost } from '../drivers/local/postgres-host';
import { BackupReconciler } from '../controllers/backup';
import { BackupPolicyReconciler } from '../controllers/backup-policy';
import { registerBackupRoutes } from '../api/routes/backups';
import { databaseBinding } from '../controllers/database';
import { DATABASE_BACKUPS, registerDatabaseRoutes } from '../api/routes/databases';
import { drivenFamilyModule } from './module';

export const databaseModule = drivenFamilyModule<DatabaseDriver>({
  family: databaseFamily,
  drivers: {
    simulated: (ctx) => new SimulatedDatabaseDriver(ctx.simulation),
    kubernetes: (ctx) =>
      new PostgresStatefulSetDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'database-driver' }),
        postgres: ctx.cluster.databases,
        backups: new SimulatedBackupDriver(ctx.simulation),
      }),
    cluster: {
      // Named only (CLOUDPLANE_DRIVER_DATABASE=cloudnative-pg): see docs/architecture/database-driver.md for why it is not detected.
      'cloudnative-pg': (ctx) =>
        new CloudNativePgDatabaseDriver({
          kubeConfig: ctx.kube.kubeConfig,
          systemNamespace: ctx.kube.systemNamespace,
          logger: ctx.logger.child({ component: 'database-driver' }),
          settings: { image: ctx.cluster.databases.cnpgImage, storageClass: ctx.cluster.databases.storageClass },
          backups: new SimulatedBackupDriver(ctx.simulation),
        }),
    },
    local: ({ config, logger }) => {
      const { postgresBinDir, localDatabaseDir } = config.drivers;
      const install = findPostgres(postgresBinDir, localDatabaseDir, PG_VERSIONS);
      if ('missing' in install) return install;
      const driver = new LocalDatabaseDriver(new PostgresHost(install, localDatabaseDir, logger.child({ component: 'local-postgres' })));
      return { driver, found: driver.describe() };
    },
  },
  reconcilers: (deps, driver) => [
    deps.managed(databaseBinding(driver, deps.store)),
    // Its backups are the backup family's, carried out by this driver (the backup module's reconciler takes servers').
    new BackupReconciler(deps.store, deps.writer, driver.backups, databaseFamily),
    new BackupPolicyReconciler(deps.store, deps.writer, deps.config.backupPolicyDayMs, { family: databaseFamily, field: 'database_id' }),
  ],
  records: [
    // A user's password: needed while its database, not deleted, still has the user.
    {
      prefix: USER_PASSWORD_PREFIX,
      sealed: true,
      owner: (entry) => {
        const owner = ownerOfUserPassword(entry.name);
        return owner ? { kind: databaseFamily.kind, id: owner.id } : null;
      },
      needs: (database, entry) => {
        const user = ownerOfUserPassword(entry.name)?.user;
        const users = fieldOf(database.spec, 'users');
        return database.status.status !== 'deleted' && Array.isArray(users) && users.some((u) => fieldOf(u, 'name') === user);
      },
    },
  ],
  routes: (app, ctx) => {
    registerDatabaseRoutes(app, ctx);
    registerBackupRoutes(app, ctx, DATABASE_BACKUPS);
  },
});

/** Managed PostgreSQL databases: simulated on the embedded default (a local and a cluster driver come next). */
import { databaseFamily } from '../resources/database';
import type { DatabaseDriver } from '../drivers/database';
import { SimulatedDatabaseDriver } from '../drivers/simulated/families';
import { databaseBinding } from '../controllers/database';
import { registerDatabaseRoutes } from '../api/routes/databases';
import { drivenFamilyModule } from './module';

export const databaseModule = drivenFamilyModule<DatabaseDriver>({
  family: databaseFamily,
  drivers: {
    simulated: (ctx) => new SimulatedDatabaseDriver(ctx.simulation),
  },
  reconcilers: (deps, driver) => [deps.managed(databaseBinding(driver, deps.store))],
  routes: (app, ctx) => {
    registerDatabaseRoutes(app, ctx);
  },
});

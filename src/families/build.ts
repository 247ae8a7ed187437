/**
 * The family modules built for a configuration: their drivers first (a family whose driver
 * cannot be had stops start-up before anything opens), then what the leader and the API
 * take from them.
 */
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { AnyFamily } from '../resources/family';
import { CONNECTION_SECRET_FIELD } from '../resources/schema-kit';
import type { NamespacedWatches } from '../store/kubernetes/namespaced-watches';
import type { Reconciler } from '../controllers/controller';
import type { FamilyReconcilerDeps } from '../controllers/registry';
import type { ApiApp } from '../api/api-app';
import type { ApiContext } from '../api/context';
import { buildContextOf, checkDriverSettings, ChosenDriver, DriverSet, SomeDriver } from '../drivers/registry';
import type { Simulation } from '../drivers/simulated/simulation';
import { driverFamiliesOf, FamilyModule } from './module';

export interface BuiltFamilies {
  /** The drivers in use, by family: meta.provider reads their health. */
  drivers: DriverSet;
  /** Each module's reconcilers, for controllers/registry.ts buildReconcilers. */
  reconcilers: ReadonlyArray<(deps: FamilyReconcilerDeps) => Reconciler[]>;
  /** Registers every module's routes, in the modules' order (api/app.ts). */
  routes(app: ApiApp, ctx: ApiContext): void;
  /** The simulation behind the simulated drivers, which the simulation API's faults reach. */
  simulation: Simulation;
}

/**
 * Throws, naming the family, unless `defined` (src/resources/registry.ts) and the modules
 * hold the same families, each in one module, and each family whose spec offers a
 * connection Secret says what it holds.
 */
export function checkFamilyModules(modules: readonly FamilyModule[], defined: readonly AnyFamily[]): void {
  const inModules = modules.flatMap((m) => m.families);
  for (const family of defined) {
    const count = inModules.filter((f) => f === family).length;
    if (count === 0) throw new Error(`the ${family.name} family (src/resources/registry.ts) has no module in src/families/index.ts`);
    if (count > 1) throw new Error(`the ${family.name} family is in ${count} modules of src/families/index.ts; it belongs in one`);
  }
  const undefinedFamily = inModules.find((f) => !defined.includes(f));
  if (undefinedFamily) throw new Error(`the ${undefinedFamily.name} family has a module but is not in src/resources/registry.ts`);
  const silent = defined.find((f) => CONNECTION_SECRET_FIELD in f.schemas.spec.properties && !f.connectionDetails);
  if (silent) throw new Error(`the ${silent.name} family offers ${CONNECTION_SECRET_FIELD} but does not declare its connectionDetails`);
}

export function buildFamilies(
  modules: readonly FamilyModule[],
  defined: readonly AnyFamily[],
  config: Config,
  logger: Logger,
  watches?: NamespacedWatches,
): BuiltFamilies {
  checkFamilyModules(modules, defined);
  checkDriverSettings(config, driverFamiliesOf(modules));
  const ctx = buildContextOf(config, logger, watches);
  const built = modules.map((m) => ({ module: m, parts: m.build(ctx) }));
  const drivers = new Map<string, ChosenDriver<SomeDriver>>();
  for (const { module, parts } of built) if (parts.driver) drivers.set(module.families[0].name, parts.driver);
  return {
    drivers: new DriverSet(drivers),
    reconcilers: built.map(
      ({ parts }) =>
        (deps) =>
          parts.reconcilers(deps),
    ),
    routes: (app, apiCtx) => {
      for (const { parts } of built) parts.routes(app, apiCtx);
    },
    simulation: ctx.simulation,
  };
}

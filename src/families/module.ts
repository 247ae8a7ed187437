/**
 * A family module: everything that makes a resource family beyond its definition (its
 * schema, rules and state machine, in src/resources/), put together in one declaration,
 * the drivers it has, its reconcilers and its routes. Every registry the service runs on
 * is derived from the list of modules (index.ts): the drivers in use, the reconcilers the
 * leader runs and the routes of the API.
 *
 * A module sits above the layers it joins (docs/layers.md): its driver's type flows from
 * the factories to the reconcilers and routes that use it, with no map of drivers by name
 * in between.
 */
import type { AnyFamily } from '../resources/family';
import type { Reconciler } from '../controllers/controller';
import type { FamilyReconcilerDeps } from '../controllers/registry';
import type { RecordKind } from '../store/record-kinds';
import type { ApiApp } from '../api/api-app';
import type { ApiContext } from '../api/context';
import { registerFamilyReads, registerFamilyRoutes } from '../api/routes/families';
import { registerReconcileRoute } from '../api/routes/reconcile';
import { BuildContext, ChosenDriver, chooseDriver, DriverFactories, driverNames, SomeDriver } from '../drivers/registry';

/** The parts of a module whose families need no driver. */
export interface FamilyParts {
  /** The families it makes: one, or a few that only exist together (an agent thread and its messages). */
  families: readonly [AnyFamily, ...AnyFamily[]];
  /** Its reconcilers; a family's own one goes through `deps.adopt` (or `deps.managed`) to take in what kubectl made. */
  reconcilers?(deps: FamilyReconcilerDeps): Reconciler[];
  /** Its routes beyond the generic ones of each family (api/routes/families.ts). */
  routes?(app: ApiApp, ctx: ApiContext): void;
  /** The store secrets and records its resources own beyond a definition's write-only `secret`: the sweep removes those left without their owner. */
  records?: readonly RecordKind[];
}

/** The parts of a module whose family's work is done by a driver. */
export interface DrivenFamilyParts<D extends SomeDriver> {
  family: AnyFamily;
  /** The drivers it has: which one runs is chosen by configuration (drivers/registry.ts). */
  drivers: DriverFactories<D>;
  reconcilers(deps: FamilyReconcilerDeps, driver: D): Reconciler[];
  routes?(app: ApiApp, ctx: ApiContext, driver: D): void;
  /** The store secrets and records its resources own beyond the definition's `secret` (FamilyParts.records). */
  records?: readonly RecordKind[];
}

/** A module as the registries see it: its driver's type stays inside. */
export interface FamilyModule {
  readonly families: readonly AnyFamily[];
  /** The names of the drivers its family has, when its work is done by one. */
  readonly driverNames?: readonly string[];
  readonly records: readonly RecordKind[];
  /** Builds its driver (the configured one), ready for its reconcilers and routes. */
  build(ctx: BuildContext): BuiltFamilyModule;
}

export interface BuiltFamilyModule {
  /** Its family's driver in use, when it has drivers. */
  readonly driver?: ChosenDriver<SomeDriver>;
  reconcilers(deps: FamilyReconcilerDeps): Reconciler[];
  /** Its families' generic routes, then its own. */
  routes(app: ApiApp, ctx: ApiContext): void;
}

/** The generic routes of each family, and reconcile-now of a provider-backed one. */
const genericRoutes = (families: readonly AnyFamily[], app: ApiApp, ctx: ApiContext) => {
  for (const family of families) {
    if (family.standardRoutes === false) continue;
    if (family.standardRoutes === 'reads') {
      registerFamilyReads(app, ctx, family);
      continue;
    }
    registerFamilyRoutes(app, ctx, family);
    if (family.providerBacked) registerReconcileRoute(app, ctx, family);
  }
};

export function familyModule(parts: FamilyParts): FamilyModule {
  return {
    families: parts.families,
    records: parts.records ?? [],
    build: () => ({
      reconcilers: (deps) => parts.reconcilers?.(deps) ?? [],
      routes: (app, ctx) => {
        genericRoutes(parts.families, app, ctx);
        parts.routes?.(app, ctx);
      },
    }),
  };
}

export function drivenFamilyModule<D extends SomeDriver>(parts: DrivenFamilyParts<D>): FamilyModule {
  return {
    families: [parts.family],
    driverNames: driverNames(parts.drivers),
    records: parts.records ?? [],
    build: (ctx) => {
      const chosen = chooseDriver(parts.family.name, parts.drivers, ctx);
      return {
        driver: chosen,
        reconcilers: (deps) => parts.reconcilers(deps, chosen.driver),
        routes: (app, apiCtx) => {
          genericRoutes([parts.family], app, apiCtx);
          parts.routes?.(app, apiCtx, chosen.driver);
        },
      };
    },
  };
}

/** The families whose work a driver does, in the modules' order: what CLOUDPLANE_DRIVER_<FAMILY> may name. */
export const driverFamiliesOf = (modules: readonly FamilyModule[]): string[] => modules.flatMap((m) => (m.driverNames ? m.families.map((f) => f.name) : []));

/**
 * Which driver does a family's work, chosen by configuration: the provider's default for
 * the mode (`local` on the embedded default, `kubernetes` in cluster mode), and a
 * per-family override (CLOUDPLANE_DRIVER_<FAMILY>). Each family lists the drivers it has in
 * its module (src/families/); a family without a driver of the chosen provider falls back
 * to `simulated`, saying so in the log (the local provider says so only of a local driver
 * whose software is missing), while a driver named explicitly must exist, or the service
 * refuses to start. This is the choosing and building every family shares, and the
 * set of drivers in use that meta.provider reads.
 */
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../config';
import { kubeConfigFor } from '../store';
import type { NamespacedWatches } from '../store/kubernetes/namespaced-watches';
import type { DriverContext, DriverHealth, ExternalRecord, ProviderHealth } from './types';
import { Simulation } from './simulated/simulation';
import { entryOf } from '../lib/maps';
import { known } from '../lib/known';

/** What drivers are built from; `kube` only in cluster mode. */
export interface BuildContext extends DriverContext {
  simulation: Simulation;
}

/** What the drivers of the cluster the operator runs in are built from (cluster mode only). */
export interface ClusterContext extends BuildContext {
  kube: NonNullable<DriverContext['kube']>;
  cluster: KubernetesConfig;
}

/**
 * A driver that runs real software on this machine (PostgreSQL's programs), or why it
 * cannot here (the programs are not installed): `found` is what it runs, said at start-up.
 */
export type LocalDriver<D> = { driver: D; found: string } | { missing: string };

/**
 * A family's drivers: the simulated one, one that makes objects in the cluster where it
 * has one, one that runs real software on this machine (the embedded default's), and
 * drivers of services outside the cluster (an S3 endpoint), which need no cluster and so
 * work in either mode.
 */
export interface DriverFactories<D> {
  simulated: (ctx: BuildContext) => D;
  kubernetes?: (ctx: ClusterContext) => D;
  local?: (ctx: BuildContext) => LocalDriver<D>;
  external?: Record<string, (ctx: BuildContext) => D>;
  /**
   * Further drivers that make objects in the cluster, for software that may or may not be
   * installed there (CloudNativePG's operator): chosen by name only, in cluster mode.
   */
  cluster?: Record<string, (ctx: ClusterContext) => D>;
}

/** What every driver answers, whatever its family. */
export interface SomeDriver {
  health(): DriverHealth;
  /** Whether deleting the resource would destroy data the driver's backend holds for it (a bucket's objects). */
  holdsData?(resource: { id: string; team: string; external: ExternalRecord | null }): Promise<boolean>;
}

/** A family's driver in use, and the name it was chosen by. */
export interface ChosenDriver<D> {
  name: string;
  driver: D;
}

/** The driver names a family has. */
export const driverNames = (factories: DriverFactories<unknown>): string[] => [
  'simulated',
  ...(factories.kubernetes ? ['kubernetes'] : []),
  ...(factories.local ? ['local'] : []),
  ...Object.keys(factories.external ?? {}),
  ...Object.keys(factories.cluster ?? {}),
];

/** CLOUDPLANE_DRIVER_LOAD_BALANCER for load_balancer. */
export const settingOf = (family: string) => `CLOUDPLANE_DRIVER_${family.toUpperCase()}`;

/** The context every family's drivers are built from. `watches`: the team namespaces' watches the store uses too (store/index.ts, teamNamespaceWatchesFor). */
export function buildContextOf(config: Config, logger: Logger, watches?: NamespacedWatches): BuildContext {
  const kube = config.kubernetes ? { kubeConfig: kubeConfigFor(config.kubernetes), systemNamespace: config.kubernetes.systemNamespace, watches } : undefined;
  return { config, logger, kube, simulation: new Simulation(config.simulation) };
}

/** Throws, naming the setting, when an override names a family that has no drivers. */
export function checkDriverSettings(config: Config, familiesWithDrivers: readonly string[]): void {
  for (const family of Object.keys(config.drivers.overrides)) {
    if (!familiesWithDrivers.includes(family))
      throw new Error(`${settingOf(family)} names no family with drivers; those are ${familiesWithDrivers.join(', ')}`);
  }
}

/** The configured driver of a family, built; throws, naming the setting, when it cannot be had. */
export function chooseDriver<D>(family: string, factories: DriverFactories<D>, ctx: BuildContext): ChosenDriver<D> {
  const name = chosenName(family, factories, ctx.config, ctx.logger);
  if (name === 'local') return chooseLocal(family, factories, ctx);
  return { name, driver: buildDriver(family, factories, name, ctx) };
}

function chosenName(family: string, factories: DriverFactories<unknown>, config: Config, logger: Logger): string {
  const available = driverNames(factories);
  const named = entryOf(config.drivers.overrides, family);
  if (named !== undefined) {
    if (!available.includes(named))
      throw new Error(`${settingOf(family)}=${named}: the ${family} family has no driver "${named}"; it has ${available.join(', ')}`);
    return named;
  }
  const provider = config.drivers.provider;
  if (available.includes(provider)) return provider;
  // The local provider is "real where this machine can": the other families simulate, as they always have.
  if (provider !== 'local')
    logger.warn({ family, provider, using: 'simulated' }, `the ${family} family has no ${provider} driver yet; it uses the simulated one`);
  return 'simulated';
}

/**
 * A family's local driver: refused at start-up when named explicitly and its software is
 * missing; taken by the local provider where found, and the simulated driver otherwise,
 * said at start-up either way.
 */
function chooseLocal<D>(family: string, factories: DriverFactories<D>, ctx: BuildContext): ChosenDriver<D> {
  const local = known(factories.local, `the ${family} family's local driver`)(ctx);
  const named = entryOf(ctx.config.drivers.overrides, family) === 'local';
  if ('missing' in local) {
    if (named) throw new Error(`${settingOf(family)}=local: ${local.missing}`);
    ctx.logger.warn({ family, using: 'simulated' }, `the ${family} family's local driver cannot run here (${local.missing}); it uses the simulated one`);
    return { name: 'simulated', driver: factories.simulated(ctx) };
  }
  ctx.logger.info({ family, driver: 'local' }, `the ${family} family runs ${local.found}`);
  return { name: 'local', driver: local.driver };
}

/** A family's driver of that name, built; throws when it needs the cluster mode the service is not in. */
function buildDriver<D>(family: string, factories: DriverFactories<D>, name: string, ctx: BuildContext): D {
  if (name === 'simulated') return factories.simulated(ctx);
  const external = factories.external?.[name];
  if (external) return external(ctx);
  const cluster = ctx.config.kubernetes;
  const factory = name === 'kubernetes' ? factories.kubernetes : factories.cluster?.[name];
  if (!ctx.kube || !cluster || !factory)
    throw new Error(`${settingOf(family)}=${name} needs cluster mode (CLOUDPLANE_STORE=kubernetes); the embedded default has no cluster to run it on`);
  return factory({ ...ctx, kube: ctx.kube, cluster });
}

/** The drivers in use, by family name, with the health meta.provider shows for each family. */
export class DriverSet {
  constructor(private readonly byFamily: ReadonlyMap<string, ChosenDriver<SomeDriver>>) {}

  /** The driver name chosen for each family with drivers. */
  get chosen(): Record<string, string> {
    return Object.fromEntries([...this.byFamily].map(([family, { name }]) => [family, name]));
  }

  /**
   * Whether deleting the resource would destroy data its driver's backend holds for it (a
   * bucket's objects); false for drivers that hold none. Throws when the backend cannot be asked.
   */
  async holdsData(family: string, resource: { id: string; team: string; external: ExternalRecord | null }): Promise<boolean> {
    const driver = this.byFamily.get(family)?.driver;
    return driver?.holdsData ? driver.holdsData(resource) : false;
  }

  /** The health of the driver behind a family, as meta.provider shows it. */
  health(family: string): ProviderHealth {
    return this.byFamily.get(family)?.driver.health().state ?? 'connected';
  }
}

/**
 * Which driver does each family's work, chosen by configuration: the provider's default
 * for the mode (`simulated` on the embedded default, `kubernetes` in cluster mode), and a
 * per-family override (CLOUDPLANE_DRIVER_<FAMILY>). Each family lists the drivers it has;
 * a family without a driver of the chosen provider falls back to `simulated`, saying so
 * in the log, while a driver named explicitly must exist, or the service refuses to start.
 */
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../config';
import { kubeConfigFor } from '../store';
import type { NamespacedWatches } from '../store/kubernetes/namespaced-watches';
import type { DriverContext, ExternalRecord, ProviderHealth } from './types';
import type { ServerDriver } from './server';
import type { LoadBalancerDriver } from './load-balancer';
import type { VpnGatewayDriver } from './vpn-gateway';
import type { BucketDriver, FileShareDriver } from './storage';
import type { JobExecutor } from './job';
import type { BackupDriver } from './backup';
import { SimulatedBackupDriver } from './simulated/backups';
import { VolumeSnapshotBackupDriver } from './kubernetes/backup-snapshots';
import { Simulation } from './simulated/simulation';
import {
  simulatedBucketDriver,
  simulatedFileShareDriver,
  SimulatedLoadBalancerDriver,
  SimulatedServerDriver,
  SimulatedVpnGatewayDriver,
} from './simulated/families';
import { SimulatedJobExecutor } from './simulated/jobs';
import { KubernetesJobExecutor } from './kubernetes/jobs';
import { PodServerDriver } from './kubernetes/server-pods';
import { HaproxyLoadBalancerDriver } from './kubernetes/load-balancer-haproxy';
import { FileShareClaimDriver } from './kubernetes/file-share-claims';
import { S3BucketDriver } from './s3/bucket-driver';
import { VpnGatewayTunnelDriver } from './kubernetes/vpn-gateway-tunnel';

/** The driver of every reconciled family, by family name. */
export interface Drivers {
  server: ServerDriver;
  load_balancer: LoadBalancerDriver;
  vpn_gateway: VpnGatewayDriver;
  bucket: BucketDriver;
  file_share: FileShareDriver;
  job: JobExecutor;
  backup: BackupDriver;
}

export type DriverFamily = keyof Drivers;

/** What drivers are built from; `kube` only in cluster mode. */
interface BuildContext extends DriverContext {
  simulation: Simulation;
}

/** What the drivers of the cluster the operator runs in are built from (cluster mode only). */
interface ClusterContext extends BuildContext {
  kube: NonNullable<DriverContext['kube']>;
  cluster: KubernetesConfig;
}

/**
 * A family's drivers: the simulated one, one that makes objects in the cluster where it
 * has one, and drivers of services outside the cluster (an S3 endpoint), which need no
 * cluster and so work in either mode.
 */
interface Factories<D> {
  simulated: (ctx: BuildContext) => D;
  kubernetes?: (ctx: ClusterContext) => D;
  external?: Record<string, (ctx: BuildContext) => D>;
}

/** The driver names a family has. */
const driverNames = (factories: Factories<unknown>): string[] => [
  'simulated',
  ...(factories.kubernetes ? ['kubernetes'] : []),
  ...Object.keys(factories.external ?? {}),
];

type Catalog = { [F in DriverFamily]: Factories<Drivers[F]> };

const CATALOG: Catalog = {
  server: {
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
  load_balancer: {
    simulated: (ctx) => new SimulatedLoadBalancerDriver(ctx.simulation),
    kubernetes: (ctx) => {
      const { statsTimeoutMs, ...haproxy } = ctx.cluster.haproxy;
      return new HaproxyLoadBalancerDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'load-balancer-driver' }),
        haproxy,
        statsTimeoutMs,
      });
    },
  },
  vpn_gateway: {
    simulated: (ctx) => new SimulatedVpnGatewayDriver(ctx.simulation),
    kubernetes: (ctx) => {
      const { statusTimeoutMs, ...agent } = ctx.cluster.vpnGateways;
      return new VpnGatewayTunnelDriver({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        watches: ctx.kube.watches,
        logger: ctx.logger.child({ component: 'vpn-gateway-driver' }),
        agent,
        statusTimeoutMs,
      });
    },
  },
  bucket: {
    simulated: (ctx) => simulatedBucketDriver(ctx.simulation),
    external: { s3: (ctx) => new S3BucketDriver({ s3: ctx.config.s3, logger: ctx.logger.child({ component: 'bucket-driver' }) }) },
  },
  file_share: {
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
  job: {
    simulated: (ctx) => new SimulatedJobExecutor(ctx.simulation),
    kubernetes: (ctx) =>
      new KubernetesJobExecutor({
        kubeConfig: ctx.kube.kubeConfig,
        systemNamespace: ctx.kube.systemNamespace,
        logger: ctx.logger.child({ component: 'job-driver' }),
        imagePullTimeoutMs: ctx.cluster.jobImagePullTimeoutMs,
      }),
  },
  backup: {
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
};

const isDriverFamily = (name: string): name is DriverFamily => Object.hasOwn(CATALOG, name);

export const DRIVER_FAMILIES: DriverFamily[] = Object.keys(CATALOG).filter(isDriverFamily);

/** The drivers in use, with the health meta.provider shows for each family. */
export class DriverSet {
  private constructor(
    readonly drivers: Drivers,
    /** The driver name chosen for each family. */
    readonly chosen: Record<DriverFamily, string>,
  ) {}

  /** Builds the configured drivers; throws, naming the setting, when a family's driver cannot be had. */
  /** `watches`: the team namespaces' watches the store uses too (store/index.ts, teamNamespaceWatchesFor). */
  static build(config: Config, logger: Logger, watches?: NamespacedWatches): DriverSet {
    const kube = config.kubernetes ? { kubeConfig: kubeConfigFor(config.kubernetes), systemNamespace: config.kubernetes.systemNamespace, watches } : undefined;
    const ctx: BuildContext = { config, logger, kube, simulation: new Simulation(config.simulation) };
    for (const family of Object.keys(config.drivers.overrides)) {
      if (!isDriverFamily(family))
        throw new Error(`CLOUDPLANE_DRIVER_${family.toUpperCase()} names no family with drivers; those are ${DRIVER_FAMILIES.join(', ')}`);
    }
    const choose = (family: DriverFamily) => chooseDriver(family, config, logger);
    const chosen: Record<DriverFamily, string> = {
      server: choose('server'),
      load_balancer: choose('load_balancer'),
      vpn_gateway: choose('vpn_gateway'),
      bucket: choose('bucket'),
      file_share: choose('file_share'),
      job: choose('job'),
      backup: choose('backup'),
    };
    const build = <F extends DriverFamily>(family: F): Drivers[F] => buildDriver(family, chosen[family], ctx, config.kubernetes);
    const drivers: Drivers = {
      server: build('server'),
      load_balancer: build('load_balancer'),
      vpn_gateway: build('vpn_gateway'),
      bucket: build('bucket'),
      file_share: build('file_share'),
      job: build('job'),
      backup: build('backup'),
    };
    return new DriverSet(drivers, chosen);
  }

  /**
   * Whether deleting the resource would destroy data its driver's backend holds for it (a
   * bucket's objects); false for drivers that hold none. Throws when the backend cannot be asked.
   */
  async holdsData(family: string, resource: { id: string; team: string; external: ExternalRecord | null }): Promise<boolean> {
    const driver = isDriverFamily(family) ? this.drivers[family] : undefined;
    return driver && 'holdsData' in driver && driver.holdsData ? driver.holdsData(resource) : false;
  }

  /** The health of the driver behind a family, as meta.provider shows it. */
  health(family: string): ProviderHealth {
    const driver = isDriverFamily(family) ? this.drivers[family] : undefined;
    return driver ? driver.health().state : 'connected';
  }
}

/** CLOUDPLANE_DRIVER_LOAD_BALANCER for load_balancer. */
export const settingOf = (family: DriverFamily) => `CLOUDPLANE_DRIVER_${family.toUpperCase()}`;

/** A family's driver of that name, built; throws when it needs the cluster mode the service is not in. */
function buildDriver<F extends DriverFamily>(family: F, name: string, ctx: BuildContext, cluster: KubernetesConfig | undefined): Drivers[F] {
  const factories: Factories<Drivers[F]> = CATALOG[family];
  if (name === 'simulated') return factories.simulated(ctx);
  const external = factories.external?.[name];
  if (external) return external(ctx);
  if (!ctx.kube || !cluster)
    throw new Error(`${settingOf(family)}=${name} needs cluster mode (CLOUDPLANE_STORE=kubernetes); the embedded default has no cluster to run it on`);
  return factories.kubernetes!({ ...ctx, kube: ctx.kube, cluster });
}

function chooseDriver(family: DriverFamily, config: Config, logger: Logger): string {
  const available = driverNames(CATALOG[family]);
  const named = config.drivers.overrides[family];
  if (named !== undefined) {
    if (!available.includes(named))
      throw new Error(`${settingOf(family)}=${named}: the ${family} family has no driver "${named}"; it has ${available.join(', ')}`);
    return named;
  }
  const provider = config.drivers.provider;
  if (available.includes(provider)) return provider;
  logger.warn({ family, provider, using: 'simulated' }, `the ${family} family has no ${provider} driver yet; it uses the simulated one`);
  return 'simulated';
}

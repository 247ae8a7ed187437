/**
 * One reconciler per reconciled family, built from the shared dependencies. The reconcilers
 * of the layers above controllers (webhook subscriptions, accounts) are made by the
 * composition root (service.ts) and handed in as `above`; they are adopted and paused here
 * like the rest.
 */
import type { Store } from '../store/types';
import type { AnyFamily } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import type { Config } from '../config';
import type { QuotaScope } from '../resources/quota';
import type { DriverSet } from '../drivers/registry';
import type { Reconciler } from './controller';
import type { PublishedEvents } from '../events/outbox-relay';
import { ManagedReconciler, AnyBinding } from './managed';
import { loadBalancerBinding } from './load-balancer';
import { vpnGatewayBinding } from './vpn-gateway';
import { serverBinding } from './server';
import { bucketBinding } from './bucket';
import { JobReconciler } from './job';
import { BackupReconciler } from './backup';
import { BackupPolicyReconciler } from './backup-policy';
import { adopting } from './adoption';
import { pausable } from './pause';
import { families } from '../resources/registry';
import { fileShareBinding } from './file-share';
import { ConnectionDetails } from './connection-details';
import { kubeConfigFor } from '../store';
import { AlertPolicyReconciler } from './alert-policy';
import { IncidentReconciler } from './incident';
import { ruleContextOf } from '../events/catalog';

export interface ReconcilerDeps {
  store: Store;
  writer: ResourceWriter;
  drivers: DriverSet;
  config: Config;
  /** What adoption counts a kubectl-made resource's team quota against. */
  quota: QuotaScope;
  /** The outbox relay, whose published events managed resources' status writes take out of the outbox. */
  outbox?: PublishedEvents;
  /** The reconcilers of the layers above (webhooks/, accounts/); `adopt` takes in what kubectl made of a family. */
  above?: (adopt: Adopt) => Reconciler[];
}

/** A reconciler of `family` that first takes in what kubectl created (adoption.ts). */
export type Adopt = (family: AnyFamily, reconciler: Reconciler) => Reconciler;

export function buildReconcilers(deps: ReconcilerDeps): Reconciler[] {
  const { drivers } = deps.drivers;
  const bindings: AnyBinding[] = [
    loadBalancerBinding(drivers.load_balancer, deps.store, deps.config.backendDrainMs),
    vpnGatewayBinding(drivers.vpn_gateway, deps.store, deps.config.tunnelCounterIntervalMs),
    serverBinding(drivers.server, deps.store),
    bucketBinding(drivers.bucket),
    fileShareBinding(drivers.file_share),
  ];
  // The embedded default has no cluster, so no Secrets to publish to.
  const cluster = deps.config.kubernetes;
  const connectionDetails = cluster ? new ConnectionDetails(kubeConfigFor(cluster), cluster.systemNamespace, deps.writer) : undefined;
  const reconcilers: Reconciler[] = [
    ...bindings.map((binding) => new ManagedReconciler(binding, deps.store, deps.writer, deps.config.deletedRetentionMs, connectionDetails, deps.outbox)),
    new JobReconciler(deps.store, deps.writer, drivers.job),
    new BackupReconciler(deps.store, deps.writer, drivers.backup),
    new AlertPolicyReconciler(deps.store, deps.writer, deps.config.deletedRetentionMs),
    new IncidentReconciler(deps.store, deps.writer),
  ];
  // Every reconciled family also takes in what kubectl created, and can be paused per resource.
  const adopt: Adopt = (family, reconciler) => adopting(family, reconciler, deps.store, deps.writer, deps.quota, ruleContextOf(deps.config));
  const adopted = reconcilers.map((r) =>
    adopt(
      families.find((f) => f.kind === r.kind)!,
      r,
    ),
  );
  // Servers' daily backups: a second reconciler of servers, which only makes and prunes backups.
  const backupPolicies = new BackupPolicyReconciler(deps.store, deps.writer, deps.config.backupPolicyDayMs);
  return [...adopted, backupPolicies, ...(deps.above?.(adopt) ?? [])].map((r) => pausable(r, deps.store));
}

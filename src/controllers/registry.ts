/** One reconciler per reconciled family, built from the shared dependencies. */
import type { Store } from '../store/types';
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
import { signingSecretFirst, WebhookSubscriptionReconciler } from '../webhooks/reconciler';
import { webhookFamily } from '../resources/webhook';
import { secretObjectName } from '../store/kubernetes/names';
import { accountReconcilers } from '../accounts/reconciler';
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
}

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
  const adopted = reconcilers.map((r) => adopting(families.find((f) => f.kind === r.kind)!, r, deps.store, deps.writer, deps.quota, ruleContextOf(deps.config)));
  // A kubectl-made subscription gets its signing secret before adoption lets it deliver.
  const webhooks = new WebhookSubscriptionReconciler(deps.store, deps.writer, cluster ? secretObjectName : undefined);
  const webhooksAdopted = signingSecretFirst(adopting(webhookFamily, webhooks, deps.store, deps.writer, deps.quota, ruleContextOf(deps.config)), deps.store);
  // Accounts settle what kubectl changed; one made with kubectl is not taken in (accounts/reconciler.ts).
  // Servers' daily backups: a second reconciler of servers, which only makes and prunes backups.
  const backupPolicies = new BackupPolicyReconciler(deps.store, deps.writer, deps.config.backupPolicyDayMs);
  return [...adopted, webhooksAdopted, backupPolicies, ...accountReconcilers(deps.store, deps.writer)].map((r) => pausable(r, deps.store));
}

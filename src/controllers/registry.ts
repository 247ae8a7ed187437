/**
 * The reconcilers of every family, built from the shared dependencies. Which reconcilers a
 * family has is declared in its module (src/families/); here is what they share: the
 * managed reconciler of a binding, adoption of what kubectl created, the report of each
 * pass on its resource (reporting.ts), and pausing per resource, which every reconciler gets.
 */
import type { Store } from '../store/types';
import type { AnyFamily } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import type { Config } from '../config';
import type { QuotaScope } from '../resources/quota';
import type { Reconciler } from './controller';
import { ManagedReconciler, AnyBinding } from './managed';
import { adopting } from './adoption';
import { pausable } from './pause';
import { reportingPasses } from './reporting';
import { ConnectionDetails } from './connection-details';
import { kubeConfigFor } from '../store';
import { ruleContextOf } from '../events/catalog';

export interface ReconcilerDeps {
  store: Store;
  writer: ResourceWriter;
  config: Config;
  /** What adoption counts a kubectl-made resource's team quota against. */
  quota: QuotaScope;
}

/** What a family module builds its reconcilers with. */
export interface FamilyReconcilerDeps extends ReconcilerDeps {
  /**
   * The reconciler of `family`, taking in first what kubectl created (adoption.ts) and
   * reporting its passes on the resource (reporting.ts): a family's own reconciler is handed through this.
   */
  adopt(family: AnyFamily, reconciler: Reconciler): Reconciler;
  /** The managed reconciler of a family's binding to its driver (managed.ts), adopting. */
  managed(binding: AnyBinding): Reconciler;
}

/** Builds the reconcilers of every family module; each can be paused per resource. */
export function buildReconcilers(deps: ReconcilerDeps, families: ReadonlyArray<(deps: FamilyReconcilerDeps) => Reconciler[]>): Reconciler[] {
  // The embedded default has no cluster, so no Secrets to publish to.
  const cluster = deps.config.kubernetes;
  const connectionDetails = cluster ? new ConnectionDetails(kubeConfigFor(cluster), cluster.systemNamespace, deps.writer) : undefined;
  const adopt = (family: AnyFamily, reconciler: Reconciler) =>
    reportingPasses(family, adopting(family, reconciler, deps.store, deps.writer, deps.quota, ruleContextOf(deps.config)), deps.store, deps.writer);
  const familyDeps: FamilyReconcilerDeps = {
    ...deps,
    adopt,
    managed: (binding) => adopt(binding.family, new ManagedReconciler(binding, deps.store, deps.writer, deps.config.deletedRetentionMs, connectionDetails)),
  };
  return families.flatMap((reconcilersOf) => reconcilersOf(familyDeps)).map((r) => pausable(r, deps.store));
}

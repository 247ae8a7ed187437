/** One reconciler per reconciled family, built from the shared dependencies. */
import type { Store } from '../store/types';
import type { Provider } from '../providers/types';
import type { ResourceWriter } from '../resources/writer';
import type { Config } from '../config';
import type { Reconciler } from './controller';
import { loadBalancerReconciler } from './load-balancer';

export interface ReconcilerDeps {
  store: Store;
  writer: ResourceWriter;
  provider: Provider;
  config: Config;
}

export function buildReconcilers(deps: ReconcilerDeps): Reconciler[] {
  const base = { store: deps.store, writer: deps.writer, provider: deps.provider, retentionMs: deps.config.deletedRetentionMs };
  return [
    loadBalancerReconciler(base, deps.config.backendDrainMs),
  ];
}

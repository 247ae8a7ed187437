/** One reconciler per reconciled family, built from the shared dependencies. */
import type { Store } from '../store/types';
import type { Provider } from '../providers/types';
import type { ResourceWriter } from '../resources/writer';
import type { Config } from '../config';
import type { Reconciler } from './controller';
import { loadBalancerReconciler } from './load-balancer';
import { vpnGatewayReconciler } from './vpn-gateway';
import { serverReconciler } from './server';
import { JobReconciler } from './job';
import { LifecycleReconciler } from './lifecycle';
import { adopting } from './adoption';
import { families } from '../resources/registry';
import { bucketFamily, fileShareFamily } from '../resources/storage';

export interface ReconcilerDeps {
  store: Store;
  writer: ResourceWriter;
  provider: Provider;
  config: Config;
}

export function buildReconcilers(deps: ReconcilerDeps): Reconciler[] {
  const base = { store: deps.store, writer: deps.writer, provider: deps.provider, retentionMs: deps.config.deletedRetentionMs };
  const reconcilers: Reconciler[] = [
    loadBalancerReconciler(base, deps.config.backendDrainMs),
    vpnGatewayReconciler(base),
    serverReconciler(base),
    new LifecycleReconciler({ ...base, family: bucketFamily, readyState: 'available' }),
    new LifecycleReconciler({ ...base, family: fileShareFamily, readyState: 'available' }),
    new JobReconciler(deps.store, deps.writer, deps.provider.jobs),
  ];
  // Every reconciled family also takes in what kubectl created.
  return reconcilers.map((r) => adopting(families.find((f) => f.kind === r.kind)!, r, deps.store, deps.writer, { config: deps.config }));
}

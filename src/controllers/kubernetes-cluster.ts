/**
 * How Kubernetes clusters bind to the managed reconciler: the driver is asked for the spec
 * with the kubeconfig's token from its store secret. A running cluster shows its endpoint,
 * the version that runs and each pool's ready nodes; while a configuration change is
 * applied those stay as they were, and a change of version shows as `upgrading`; a change
 * the provider refused leaves the cluster `degraded` (as it ran before) until it is applied,
 * and so does an API server that stops answering, until it answers again.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { kubernetesClusterFamily, type KubernetesCluster } from '../resources/kubernetes-cluster';
import type { KubernetesClusterDesired, KubernetesClusterDriver, KubernetesClusterObserved, KubernetesClusterOutputs } from '../drivers/kubernetes-cluster';
import { known } from '../lib/known';

/** How a degraded cluster's status_reason begins while its API server does not answer. */
const UNREACHABLE_REASON = 'The API server does not answer';

export async function kubernetesClusterDesired(store: Store, { meta, spec }: KubernetesCluster): Promise<KubernetesClusterDesired> {
  const tokenSecret = known(kubernetesClusterFamily.secret, 'the kubeconfig token secret of a Kubernetes cluster');
  const secret = await store.secrets.get(meta.team, tokenSecret.secretName(meta.id));
  return { ...spec, token: secret?.value ?? null };
}

/** The state of a made cluster from what its driver observed. */
export function clusterState(observed: KubernetesClusterObserved, { spec, status }: KubernetesCluster): { state: string; changes?: Record<string, unknown> } {
  if (observed.unreachable) return { state: 'degraded', changes: { status_reason: `${UNREACHABLE_REASON}: ${observed.unreachable}.` } };
  // The API server answers again: what said it did not goes.
  const answering = status.status_reason?.startsWith(UNREACHABLE_REASON) ? { status_reason: null } : {};
  if (observed.refused) return { state: 'degraded', changes: answering };
  if (observed.applying) {
    // A degraded cluster stays so while its change is tried again; a new version on the way is an upgrade.
    if (status.status === 'degraded') return { state: 'degraded' };
    // No version asked is the driver's newest, which is what runs (a local driver's newest may be older than the API's).
    const upgrading = spec.version !== undefined && spec.version !== status.version;
    return { state: upgrading ? 'upgrading' : 'running', changes: answering };
  }
  return { state: 'running', changes: { ...answering, version: observed.version, node_pools: observed.node_pools } };
}

export function kubernetesClusterBinding(
  driver: KubernetesClusterDriver,
  store: Store,
): FamilyBinding<KubernetesClusterDesired, KubernetesClusterOutputs, KubernetesClusterObserved, KubernetesCluster> {
  return {
    family: kubernetesClusterFamily,
    readyState: 'running',
    driver,
    desired: (resource) => kubernetesClusterDesired(store, resource),
    outputs: ({ endpoint, certificate_authority }) => ({ endpoint, certificate_authority }),
    onReady: ({ version, node_pools }) => ({ version, node_pools }),
    steady: (observed, resource) => clusterState(observed, resource),
  };
}

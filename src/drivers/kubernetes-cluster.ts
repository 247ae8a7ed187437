/** The Kubernetes cluster drivers' contract: a control plane, its node pools, and the API server's endpoint. */
import type { KubernetesClusterSpec, ObservedNodePool } from '../resources/kubernetes-cluster';
import type { Driver } from './types';

/** What a cluster driver is asked for: the spec, with the kubeconfig's token read from its store secret. */
export interface KubernetesClusterDesired extends KubernetesClusterSpec {
  /** Null only while the secret cannot be read; a driver serves no token without it. */
  token: string | null;
}

export interface KubernetesClusterOutputs {
  /** The API server's https URL. */
  endpoint: string;
  /** The PEM certificate of the authority behind the API server's serving certificate, where the driver has one. */
  certificate_authority: string | null;
}

/** What a made cluster shows beyond its outputs. */
export interface KubernetesClusterObserved {
  /**
   * A configuration change (an upgrade, a node pool's, a new token) is being applied: what
   * runs is still what ran before, which the record keeps until the change is done.
   */
  applying: boolean;
  /** Why the last configuration change was not applied; null when none was refused. The cluster runs as before. */
  refused: string | null;
  /** The minor version that runs, once nothing is being applied. */
  version: string;
  /** Ready nodes of each pool, once nothing is being applied. */
  node_pools: ObservedNodePool[];
  /** Why the cluster's API server does not answer, where the driver asks it (a made cluster is then degraded); null while it answers. */
  unreachable?: string | null;
}

export type KubernetesClusterDriver = Driver<KubernetesClusterDesired, KubernetesClusterOutputs, KubernetesClusterObserved>;

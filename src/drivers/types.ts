/**
 * Drivers: the real work behind each family, in the manner of crossplane-runtime's
 * managed reconciler. A driver is an external client for one family's kind: it observes
 * what exists for a resource, creates it, updates it towards the desired state and
 * deletes it. Every call is idempotent and non-blocking (it starts the work and returns;
 * a later observe sees the progress), and the reconciler observes first on every pass.
 * Only the reconciler writes status: a driver answers, it never writes a resource.
 *
 * A driver keeps nothing a restart would lose. What it needs to remember of its own calls
 * (when it asked for something, an external name) it returns as an ExternalRecord, which
 * the reconciler stores in the resource's `status.external` in the same write as the step
 * that produced it, and hands back on every later call.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { NamespacedWatches } from '../store/kubernetes/namespaced-watches';
import type { ExternalRecord, Json } from '../resources/external-record';

export type { ExternalRecord, Json };

/** Health of the driver behind a family, as meta.provider shows it. */
export type ProviderHealth = 'connected' | 'degraded' | 'unavailable';

/**
 * A step the provider refused for a reason that belongs to the resource's owner, not to the
 * provider: the team namespace's own quota or limits (a ResourceQuota or LimitRange its
 * platform team set). It does not count against the provider's health; the resource says
 * it in its status_reason and the step is tried again, until the limit is raised.
 */
export class OwnerRefusal extends Error {}

export interface DriverHealth {
  state: ProviderHealth;
  /** Whether the driver's backend (an API server, a data plane) answered its last call. */
  reachable: boolean;
  /** Calls or operations that failed within the health window. */
  recentFailures: number;
  /** What the last of them said, or null. */
  lastFailure: string | null;
}

/** The custom resource that owns what a driver creates (cluster mode). */
export interface Owner {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** A resource as a driver sees it: who it is, what is wanted, and what the driver recorded. */
export interface Managed<Desired> {
  id: string;
  team: string;
  generation: number;
  /** The desired state: the spec, with references resolved (a load balancer's backends' addresses). */
  desired: Desired;
  /** What this driver returned from its last create, update or delete; null before the first. */
  external: ExternalRecord | null;
  /** The owning custom resource in cluster mode, for owner references; null in the embedded store. */
  owner: Owner | null;
}

/** Nothing exists for the resource: the reconciler creates it. */
export interface Absent {
  exists: false;
}

/** Something exists for the resource: how far it is, and what it shows. */
export interface Present<Outputs, Observed> {
  exists: true;
  /** Its configuration matches the desired state: no update is needed. */
  upToDate: boolean;
  /** It is ready for use (running, active, available). */
  ready: boolean;
  /** What it gives out (an address, a key); null while there is nothing to report. */
  outputs: Outputs | null;
  /** Family-specific state read from it: a server's power, a load balancer's backends' health, a tunnel's counters. */
  observed: Observed;
  /** A terminal failure: it will not become ready (it cannot be scheduled, its image cannot be pulled). */
  failure: string | null;
  /** Why the last update was not applied, while the resource keeps working as before. */
  rejected?: string | null;
  /** Look again after this long: something is under way, or the observed state moves (health checks, counters). */
  pollAfterMs?: number;
}

export type Observation<Outputs, Observed> = Absent | Present<Outputs, Observed>;

/** The answer to create, update and delete: what to record, and when to look again. */
export interface Step {
  external: ExternalRecord;
  pollAfterMs?: number;
  /**
   * Losing this record costs nothing but the step done again: what the step made is found
   * from the resource's identity alone, and the same call repeated makes the same thing.
   * The reconciler may then keep the record in memory and write it with the state it
   * explains (`running`), one write instead of two; a crash or a new leader in between
   * repeats the step. A record that names what only the provider knows (an id it
   * assigned) must not say so: it is written at once.
   */
  replayable?: boolean;
}

/**
 * A family's driver. `Desired` is what it is asked for, `Outputs` what a ready resource
 * gives out, `Observed` the family-specific state it reads.
 */
export interface Driver<Desired, Outputs, Observed> {
  /** What exists for the resource now. Reads only; never changes anything. */
  observe(resource: Managed<Desired>): Promise<Observation<Outputs, Observed>>;
  /** Starts making the resource; called when observe says it does not exist. */
  create(resource: Managed<Desired>): Promise<Step>;
  /** Starts bringing it to the desired state; called when observe says it is not up to date. */
  update(resource: Managed<Desired>): Promise<Step>;
  /** Starts removing it; called until observe says it no longer exists. */
  delete(resource: Managed<Desired>): Promise<Step>;
  /** The health of what the driver talks to, as last seen. */
  health(): DriverHealth;
  /**
   * Optional: calls `changed` with the resource whenever something the driver made for it
   * changes outside the driver's own calls (deleted or edited by hand, given an address),
   * so the reconciler looks at once rather than at the next resync. Returns a stop.
   */
  watchMade?(changed: (team: string, id: string) => void): () => void;
  /**
   * Optional: whether what the driver made for the resource still holds its users' data
   * (a bucket's objects), which deleting it would destroy. The API refuses such a delete
   * unless forced (the family's `deletionGuard`); a driver without it holds nothing.
   */
  holdsData?(resource: Pick<Managed<Desired>, 'id' | 'team' | 'external'>): Promise<boolean>;
}

/** What drivers are built from: the service's settings and, in cluster mode, the cluster. */
export interface DriverContext {
  config: Config;
  logger: Logger;
  /** The cluster the service runs against (cluster mode); undefined on the embedded default. */
  /** `watches`: the team namespaces' watches, shared with the store. */
  kube?: { kubeConfig: KubeConfig; systemNamespace: string; watches?: NamespacedWatches };
}

export type DriverFactory<D> = (ctx: DriverContext) => D;

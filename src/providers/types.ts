/**
 * The provider: the infrastructure behind the resources. Reconcilers ask it to do work
 * and poll the answer; an operation is identified by the resource id, its name and the
 * time it was started (kept in the resource's status), so a provider can answer after a
 * restart of the operator without remembering anything itself.
 */
export type ProviderHealth = 'connected' | 'degraded' | 'unavailable';

export interface OperationRef {
  /** e.g. `provision`, `release`, `power_off`. */
  name: string;
  started_at: string;
}

export type OperationResult<T = Record<string, never>> =
  | { state: 'pending'; retryAfterMs: number }
  | { state: 'succeeded'; outputs: T }
  | { state: 'failed'; reason: string };

export interface TunnelStats {
  tunnel_status: 'up' | 'down';
  bytes_sent: number;
  bytes_received: number;
  last_handshake: string | null;
}

export interface JobRun {
  state: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  reason: string | null;
}

export interface JobSpecForRun {
  name: string;
  command: string;
  image: string;
  region: string;
  plan: string;
}

/** Runs jobs; the simulated one in embedded mode, a Kubernetes batch/v1 Job driver in cluster mode. */
export interface JobExecutor {
  /** Starts the job if it is not started yet; idempotent. */
  submit(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<void>;
  /** The job's run as the executor sees it now. */
  observe(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<JobRun>;
  /** Stops the job; idempotent. */
  cancel(team: string, id: string, cancelledAt: string): Promise<void>;
  /** Frees what the run holds once its record is destroyed. */
  cleanup(team: string, id: string): Promise<void>;
}

export interface Provider {
  /** Health of the provider behind a family, as last seen; shown as meta.provider. */
  health(family: string): ProviderHealth;
  /** Runs or polls a named operation on a resource, returning outputs such as an address. */
  operate<T extends Record<string, unknown>>(family: string, id: string, op: OperationRef, spec: Record<string, unknown>): Promise<OperationResult<T>>;
  /** Whether a load balancer's health check of a backend passes now. */
  checkBackend(loadBalancerId: string, serverId: string, port: number): Promise<boolean>;
  /** Live tunnel state of an active VPN gateway. */
  tunnelStats(gatewayId: string, activeSince: string): Promise<TunnelStats>;
  jobs: JobExecutor;
}

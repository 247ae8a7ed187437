/**
 * The load balancer driver's contract. The reconciler resolves the attached servers into
 * addresses before it asks, so a driver renders backends without reading other
 * resources; a backend detached a moment ago is still listed, `draining`, until its grace
 * period ends, so the driver can drain it instead of cutting its connections.
 */
import type { LoadBalancerSpec } from '../resources/load-balancer';
import type { Driver, Managed } from './types';

export interface DesiredBackend {
  server_id: string;
  /** The serverRef name the reconciler resolved server_id from; null or absent for a backend given by id. */
  server_ref?: string | null;
  port: number;
  /** The server's address while it runs; null otherwise (the backend cannot be healthy). */
  address: string | null;
  /** Detached and draining: no new connections, existing ones finish until `drain_until`. */
  draining: boolean;
  drain_until: string | null;
}

export type LoadBalancerDesired = Omit<LoadBalancerSpec, 'backends'> & { backends: DesiredBackend[] };

export interface LoadBalancerOutputs {
  ipv4: string | null;
}

/** A backend's health as the data plane's own checks see it. */
export interface BackendHealth {
  server_id: string;
  port: number;
  up: boolean;
}

/**
 * Traffic counters as the data plane keeps them (HAProxy's stot, bin, bout and scur):
 * cumulative since the data plane's process started, and the sessions open now.
 */
export interface TrafficCounters {
  sessions_total: number;
  /** Bytes received from the clients (for a backend: sent to it). */
  bytes_in: number;
  /** Bytes sent to the clients (for a backend: received from it). */
  bytes_out: number;
  current_sessions: number;
}

export interface BackendTraffic extends TrafficCounters {
  server_id: string;
  port: number;
  up: boolean;
}

/** A load balancer's traffic as GET /load-balancers/{id}/stats shows it. */
export interface LoadBalancerTraffic extends TrafficCounters {
  /** How many data-plane processes (HAProxy Pods) the counters are summed over; 0 when none serves. */
  instances: number;
  /** When the counters were read. */
  observed_at: string;
  /** Every backend the load balancer is asked to have (draining ones included). */
  backends: BackendTraffic[];
}

/** The data plane's counters could not be read (a Pod that does not answer, the API server not answering). */
export class DataPlaneUnavailable extends Error {}

export interface LoadBalancerDriver extends Driver<LoadBalancerDesired, LoadBalancerOutputs, BackendHealth[]> {
  /**
   * The load balancer's traffic now, read from its data plane; reads only, each read
   * bounded by a timeout. Throws DataPlaneUnavailable when a data-plane process that serves
   * does not answer: a partial sum would look like a counter reset.
   */
  traffic(resource: Managed<LoadBalancerDesired>): Promise<LoadBalancerTraffic>;
}

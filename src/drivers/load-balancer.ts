/**
 * The load balancer driver's contract. The reconciler resolves the attached servers into
 * addresses before it asks, so a driver renders backends without reading other
 * resources; a backend detached a moment ago is still listed, `draining`, until its grace
 * period ends, so the driver can drain it instead of cutting its connections.
 */
import type { LoadBalancerSpec } from '../resources/load-balancer';
import type { Driver } from './types';

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

export type LoadBalancerDriver = Driver<LoadBalancerDesired, LoadBalancerOutputs, BackendHealth[]>;

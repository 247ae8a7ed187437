/** A load balancer's desired state as its driver is handed it, for the HAProxy tests: a plain HTTP one, changed by `overrides`. */
import type { LoadBalancerDesired } from '../../src/drivers/load-balancer';

export function desiredLoadBalancer(overrides: Partial<LoadBalancerDesired> = {}): LoadBalancerDesired {
  return {
    name: 'web',
    region: 'eu-west-1',
    algorithm: 'round_robin',
    protocol: 'http',
    port: 80,
    health_check_path: '/health',
    sticky_sessions: false,
    ssl_certificate_id: null,
    backends: [],
    ...overrides,
  };
}

/**
 * Load balancers: the managed lifecycle, plus backends. The driver is asked for the
 * attached servers by address (a server's address while it runs), and for a detached
 * backend kept `draining` for the grace period before it leaves; a backend is `healthy`
 * while it has an address and the data plane's own health check of it passes.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { loadBalancerFamily, LoadBalancer, ObservedBackend } from '../resources/load-balancer';
import { serverFamily } from '../resources/server';
import type { BackendHealth, DesiredBackend, LoadBalancerDesired, LoadBalancerDriver, LoadBalancerOutputs } from '../drivers/load-balancer';
import { addMs, nowIso } from '../lib/time';

const keyOf = (backend: { server_id: string; port: number }) => `${backend.server_id}:${backend.port}`;

export function loadBalancerBinding(driver: LoadBalancerDriver, store: Store, drainMs: number): FamilyBinding<LoadBalancerDesired, LoadBalancerOutputs, BackendHealth[]> {
  /** A server's address while it runs; a backend without one cannot be healthy. */
  const addressOf = async (team: string, serverId: string): Promise<string | null> => {
    const server = await store.get<unknown, { status: string; ipv4?: string | null }>(serverFamily.kind, team, serverId);
    return server?.status.status === 'running' ? (server.status.ipv4 ?? null) : null;
  };

  return {
    family: loadBalancerFamily,
    readyState: 'running',
    driver,
    async desired(resource) {
      const lb = resource as unknown as LoadBalancer;
      const { team } = lb.meta;
      const now = nowIso();
      const attached: DesiredBackend[] = await Promise.all(
        lb.spec.backends.map(async (b) => ({ server_id: b.server_id, port: b.port, address: await addressOf(team, b.server_id), draining: false, drain_until: null })),
      );
      const attachedIds = new Set(lb.spec.backends.map((b) => b.server_id));
      const draining: DesiredBackend[] = [];
      for (const old of lb.status.backends ?? []) {
        if (attachedIds.has(old.server_id)) continue;
        // A backend detached since the last pass starts its grace period now; the status write keeps its end.
        const drainUntil = old.status === 'draining' && old.drain_until ? old.drain_until : addMs(now, drainMs);
        if (drainUntil > now) draining.push({ server_id: old.server_id, port: old.port, address: await addressOf(team, old.server_id), draining: true, drain_until: drainUntil });
      }
      return { ...lb.spec, backends: [...attached, ...draining] };
    },
    outputs: ({ ipv4 }) => ({ ipv4 }),
    steady(health, _resource, desired) {
      const up = new Map(health.map((h) => [keyOf(h), h.up]));
      const backends: ObservedBackend[] = desired.backends.map((b) =>
        b.draining
          ? { server_id: b.server_id, port: b.port, status: 'draining', drain_until: b.drain_until }
          : { server_id: b.server_id, port: b.port, status: b.address !== null && up.get(keyOf(b)) ? 'healthy' : 'unhealthy', drain_until: null },
      );
      const drainEnds = desired.backends.filter((b) => b.drain_until).map((b) => Date.parse(b.drain_until!) - Date.now());
      return { changes: { backends }, requeueAfterMs: drainEnds.length > 0 ? Math.max(1, Math.min(...drainEnds)) : undefined };
    },
  };
}

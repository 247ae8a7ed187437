/**
 * Load balancers: the shared lifecycle, plus backends. Each pass checks every attached
 * backend (healthy while its server runs and passes the health check), and keeps a
 * detached backend `draining` for the grace period before it leaves the list.
 */
import { LifecycleReconciler, LifecycleOptions } from './lifecycle';
import { loadBalancerFamily, LoadBalancer, ObservedBackend } from '../resources/load-balancer';
import { addMs, nowIso } from '../lib/time';
import { sameJson } from '../lib/canonical-json';

const HEALTH_CHECK_INTERVAL_MS = 10_000;

export function loadBalancerReconciler(base: Omit<LifecycleOptions, 'family' | 'readyState' | 'steady'>, drainMs: number): LifecycleReconciler {
  return new LifecycleReconciler({
    ...base,
    family: loadBalancerFamily,
    readyState: 'running',
    steady: async (resource) => {
      const lb = resource as unknown as LoadBalancer;
      const now = nowIso();
      const next: ObservedBackend[] = [];
      for (const backend of lb.spec.backends) {
        const server = await base.store.get<unknown, { status: string }>('Server', lb.meta.team, backend.server_id);
        const healthy = server?.status.status === 'running' && (await base.provider.checkBackend(lb.meta.id, backend.server_id, backend.port));
        next.push({ server_id: backend.server_id, port: backend.port, status: healthy ? 'healthy' : 'unhealthy', drain_until: null });
      }
      const attached = new Set(lb.spec.backends.map((b) => b.server_id));
      let nextDrainEnd: number | null = null;
      for (const old of lb.status.backends ?? []) {
        if (attached.has(old.server_id)) continue;
        const drainUntil = old.status === 'draining' && old.drain_until ? old.drain_until : addMs(now, drainMs);
        if (drainUntil > now) {
          next.push({ server_id: old.server_id, port: old.port, status: 'draining', drain_until: drainUntil });
          const end = Date.parse(drainUntil);
          nextDrainEnd = nextDrainEnd === null ? end : Math.min(nextDrainEnd, end);
        }
      }
      const changed = !sameJson(next, lb.status.backends ?? []);
      const untilDrainEnds = nextDrainEnd === null ? HEALTH_CHECK_INTERVAL_MS : Math.max(1, nextDrainEnd - Date.now());
      // Nothing to check or drain: an attach is a spec change and brings the next pass.
      if (next.length === 0) return { changes: changed ? { backends: next } : null };
      return { changes: changed ? { backends: next } : null, requeueAfterMs: Math.min(HEALTH_CHECK_INTERVAL_MS, untilDrainEnds) };
    },
  });
}

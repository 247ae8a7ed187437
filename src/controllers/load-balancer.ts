/**
 * Load balancers: the managed lifecycle, plus backends. The driver is asked for the
 * attached servers by address (a server's address while it runs), and for a detached
 * backend kept `draining` for the grace period before it leaves; a backend is `healthy`
 * while it has an address and the data plane's own health check of it passes.
 *
 * A backend given by `serverRef` (a manifest's reference to a Server custom resource by
 * its metadata.name) is resolved here on every pass, so it attaches as soon as the server
 * appears and follows the name if the server is replaced. While a reference names no
 * server it is left out of what the driver is asked for and said in status_reason (the
 * Ready condition's message). Any change of a server a load balancer points at (it
 * appears, goes, changes state or address) brings the load balancer back here at once.
 */
import type { Store, StoredObject } from '../store/types';
import type { FamilyBinding } from './managed';
import { backendsNamingNotOneServer, BackendSpec, EXACTLY_ONE_SERVER, loadBalancerFamily, LoadBalancer, ObservedBackend } from '../resources/load-balancer';
import { serverFamily } from '../resources/server';
import type { BackendHealth, DesiredBackend, LoadBalancerDesired, LoadBalancerDriver, LoadBalancerOutputs } from '../drivers/load-balancer';
import { addMs, nowIso } from '../lib/time';
import { fieldOf } from '../lib/unknown-values';
import { asStored, lifecycleState } from '../resources/family';
import { known } from '../lib/known';

type ServerObject = StoredObject<unknown, { status: string; ipv4?: string | null }>;

const keyOf = (backend: { server_id: string; port: number }) => `${backend.server_id}:${backend.port}`;
/** Marks the status_reason this binding writes, so that it clears its own and no one else's. */
const REFERENCE_REASON = 'Backend reference';
/** Servers are watched; this only bounds how long a missed watch event could leave a reference unresolved. */
const UNRESOLVED_POLL_MS = 30_000;

const gone = (server: ServerObject) => Boolean(server.meta.deletionTimestamp) || ['deleted', 'destroyed'].includes(server.status.status);

/**
 * What the driver is asked for: the spec's backends resolved to their servers' ids and
 * addresses, and a backend detached since the last pass kept, `draining`, for `drainMs`
 * after it left. The stats route asks the driver with the same.
 */
export async function loadBalancerDesired(store: Store, lb: LoadBalancer, drainMs: number): Promise<LoadBalancerDesired> {
  /** A server's address while it runs; a backend without one cannot be healthy. */
  const addressOf = async (team: string, serverId: string): Promise<string | null> => {
    const server = await store.get<unknown, { status: string; ipv4?: string | null }>(serverFamily.kind, team, serverId);
    return server?.status.status === 'running' ? (server.status.ipv4 ?? null) : null;
  };

  /** The server a backend names: by id, or by its custom resource's name in the team's namespace; undefined when none does. */
  const serverIdOf = async (backend: BackendSpec, servers: () => Promise<ServerObject[]>): Promise<string | undefined> => {
    if (backend.server_id !== undefined) return backend.server_id;
    const { name } = known(backend.serverRef, "a backend's server_id or serverRef (the schema requires one)");
    const named = (await servers()).find((s) => s.meta.object?.name === name && !gone(s));
    return named?.meta.id;
  };

  const { team } = lb.meta;
  const now = nowIso();
  let listed: Promise<ServerObject[]> | undefined;
  const servers = () => (listed ??= store.list<ServerObject['spec'], ServerObject['status']>(serverFamily.kind, team));
  const broken = new Set(backendsNamingNotOneServer(lb.spec.backends));
  const resolved = await Promise.all(lb.spec.backends.map(async (b, i) => (broken.has(i) ? undefined : { spec: b, server_id: await serverIdOf(b, servers) })));
  const attached: DesiredBackend[] = await Promise.all(
    resolved
      .filter((r): r is { spec: BackendSpec; server_id: string } => r?.server_id !== undefined)
      .map(async ({ spec, server_id }) => ({
        server_id,
        ...(spec.serverRef ? { server_ref: spec.serverRef.name } : {}),
        port: spec.port,
        address: await addressOf(team, server_id),
        draining: false,
        drain_until: null,
      })),
  );
  const attachedIds = new Set(attached.map((b) => b.server_id));
  const draining: DesiredBackend[] = [];
  for (const old of asStored(lb.status).backends ?? []) {
    if (attachedIds.has(old.server_id)) continue;
    // A backend detached since the last pass starts its grace period now; the status write keeps its end.
    const drainUntil = old.status === 'draining' && old.drain_until ? old.drain_until : addMs(now, drainMs);
    const ref = old.server_ref ? { server_ref: old.server_ref } : {};
    if (drainUntil > now)
      draining.push({
        server_id: old.server_id,
        ...ref,
        port: old.port,
        address: await addressOf(team, old.server_id),
        draining: true,
        drain_until: drainUntil,
      });
  }
  return { ...lb.spec, backends: [...attached, ...draining] };
}

export function loadBalancerBinding(
  driver: LoadBalancerDriver,
  store: Store,
  drainMs: number,
): FamilyBinding<LoadBalancerDesired, LoadBalancerOutputs, BackendHealth[], LoadBalancer> {
  return {
    family: loadBalancerFamily,
    readyState: 'running',
    driver,
    desired: (lb) => loadBalancerDesired(store, lb, drainMs),
    outputs: ({ ipv4 }) => ({ ipv4 }),
    steady(health, resource, desired) {
      const up = new Map(health.map((h) => [keyOf(h), h.up]));
      const backends: ObservedBackend[] = desired.backends.map((b) => {
        const ref = b.server_ref ? { server_ref: b.server_ref } : {};
        return b.draining
          ? { server_id: b.server_id, ...ref, port: b.port, status: 'draining', drain_until: b.drain_until }
          : { server_id: b.server_id, ...ref, port: b.port, status: b.address !== null && up.get(keyOf(b)) ? 'healthy' : 'unhealthy', drain_until: null };
      });
      const drainEnds = desired.backends.flatMap((b) => (b.drain_until ? [Date.parse(b.drain_until) - Date.now()] : []));
      const problem = backendProblem(resource, desired);
      const current: string | null = resource.status.status_reason ?? null;
      const reason = problem ? { status_reason: problem } : current?.startsWith(REFERENCE_REASON) ? { status_reason: null } : {};
      const waits = [...drainEnds, ...(problem ? [UNRESOLVED_POLL_MS] : [])];
      return { changes: { backends, ...reason }, requeueAfterMs: waits.length > 0 ? Math.max(1, Math.min(...waits)) : undefined };
    },
    watchRelated(changed) {
      // A server's change matters to the load balancers that name it, by id or by its custom resource's name.
      return store.watch(({ object, previous }) => {
        if (object.meta.kind !== serverFamily.kind || !backendRelevantChange(object, previous)) return;
        const { team, id } = object.meta;
        const name = object.meta.object?.name;
        void store
          .list<LoadBalancer['spec'], LoadBalancer['status']>(loadBalancerFamily.kind, team)
          .then((lbs) => {
            for (const lb of lbs)
              if (lb.spec.backends.some((b) => b.server_id === id || (name !== undefined && b.serverRef?.name === name))) changed(team, lb.meta.id);
          })
          .catch(() => undefined); // The periodic resync looks again.
      });
    },
  };
}

/** What is wrong with the spec's backends that the driver cannot be asked for: a reference to no server, or a backend naming not one. */
function backendProblem(lb: LoadBalancer, desired: LoadBalancerDesired): string | null {
  const resolved = new Set(desired.backends.filter((b) => !b.draining && b.server_ref).map((b) => b.server_ref));
  const broken = new Set(backendsNamingNotOneServer(lb.spec.backends));
  const problems = lb.spec.backends.flatMap((b, i) => {
    if (broken.has(i)) return [`backends[${i}] must give ${EXACTLY_ONE_SERVER}`];
    if (b.serverRef && !resolved.has(b.serverRef.name)) return [`serverRef "${b.serverRef.name}" names no Server in this namespace`];
    return [];
  });
  return problems.length > 0 ? `${REFERENCE_REASON}: ${problems.join('; ')}; waiting for it.` : null;
}

/** Whether a server changed in what a backend reads: being there, its name, its state, its address. */
function backendRelevantChange(server: StoredObject<unknown, unknown>, previous: StoredObject<unknown, unknown> | undefined): boolean {
  if (!previous) return true;
  return (
    lifecycleState(server) !== lifecycleState(previous) ||
    fieldOf(server.status, 'ipv4') !== fieldOf(previous.status, 'ipv4') ||
    Boolean(server.meta.deletionTimestamp) !== Boolean(previous.meta.deletionTimestamp)
  );
}

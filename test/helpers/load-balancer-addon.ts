/**
 * Plays the cluster's LoadBalancer implementation (what MetalLB or a cloud's controller
 * does) for tests on the workload cluster: no real component here gives a Service of type
 * LoadBalancer an address, so this watches those Services and writes
 * status.loadBalancer.ingress[0].ip from a test pool, through the status subresource, as
 * such an add-on would. Nothing routes traffic to that address; tests that use it say so.
 *
 * The pool is 198.51.100.0/24 (TEST-NET-2, reserved for documentation): addresses no
 * real network uses, handed out in order and taken back when their Service goes away.
 */
import { CoreV1Api, KubeConfig, makeInformer, V1Service } from '@kubernetes/client-node';

export const LOAD_BALANCER_POOL = '198.51.100.0/24';
const POOL_PREFIX = '198.51.100.';

export interface LoadBalancerAddon {
  /** The addresses handed out, by Service (`namespace/name`). */
  assigned(): Map<string, string>;
  stop(): Promise<void>;
}

const keyOf = (service: V1Service) => `${service.metadata?.namespace}/${service.metadata?.name}`;
const isLoadBalancer = (service: V1Service) => service.spec?.type === 'LoadBalancer';

export async function startLoadBalancerAddon(kubeConfig: KubeConfig): Promise<LoadBalancerAddon> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const assigned = new Map<string, string>();
  let stopped = false;

  const allocate = (key: string): string | undefined => {
    const existing = assigned.get(key);
    if (existing) return existing;
    const taken = new Set(assigned.values());
    for (let host = 1; host < 255; host++) {
      const ip = `${POOL_PREFIX}${host}`;
      if (!taken.has(ip)) {
        assigned.set(key, ip);
        return ip;
      }
    }
    return undefined; // pool exhausted: the Service stays without an address, as with MetalLB
  };

  /** Writes the address unless the Service already shows it; a conflict is retried by the next event. */
  const reconcile = async (service: V1Service) => {
    if (stopped || !isLoadBalancer(service) || service.metadata?.deletionTimestamp) return;
    const ip = allocate(keyOf(service));
    if (!ip || service.status?.loadBalancer?.ingress?.[0]?.ip === ip) return;
    const { name, namespace } = service.metadata as { name: string; namespace: string };
    try {
      const current = await core.readNamespacedServiceStatus({ name, namespace });
      current.status = { ...current.status, loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } };
      await core.replaceNamespacedServiceStatus({ name, namespace, body: current });
    } catch {
      // Gone, or changed meanwhile: the informer delivers the Service again if it still needs an address.
    }
  };

  const informer = makeInformer(kubeConfig, '/api/v1/services', () => core.listServiceForAllNamespaces());
  informer.on('add', (s) => void reconcile(s));
  informer.on('update', (s) => {
    if (!isLoadBalancer(s)) assigned.delete(keyOf(s));
    void reconcile(s);
  });
  informer.on('delete', (s) => assigned.delete(keyOf(s)));
  // A watch the API server ends (or a restart of it) stops the informer: start it again.
  informer.on('error', () => {
    if (!stopped) setTimeout(() => !stopped && void informer.start().catch(() => undefined), 500);
  });
  await informer.start();

  return {
    assigned: () => new Map(assigned),
    async stop() {
      stopped = true;
      await informer.stop();
    },
  };
}

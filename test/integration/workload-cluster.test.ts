/**
 * The workload cluster of test/helpers/workload-cluster.ts behaves as a cluster does for
 * the objects Cloudplane's drivers make: real kube-controller-manager and kube-scheduler
 * turn a Deployment into a ReplicaSet and Pods on KWOK's fake nodes, KWOK (playing the
 * kubelets) makes them Running and Ready with an IP from their node's Pod CIDR, the
 * EndpointSlice controller lists them behind a Service, a deleted Pod is replaced, and a
 * Pod too big for every node stays Pending as the scheduler leaves it, and one whose image
 * is in an unreachable registry waits with ErrImagePull (KWOK playing the failed pull).
 *
 * The one part no real component here plays is the LoadBalancer implementation: the
 * ingress address of a Service of type LoadBalancer is written by the test's stand-in for
 * MetalLB or a cloud (test/helpers/load-balancer-addon.ts).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, DiscoveryV1Api, V1Pod } from '@kubernetes/client-node';
import { kubectlBinary } from '../helpers/kube-apiserver';
import { LOAD_BALANCER_POOL, LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { eventually } from '../helpers/service';
import { startWorkloadCluster, UNREACHABLE_REGISTRY, WorkloadCluster } from '../helpers/workload-cluster';

const run = promisify(execFile);
const NODE_CPU = '4';
const NAMESPACE = 'default';

/** 10.244.3.7 is inside 10.244.3.0/24. */
function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const toInt = (a: string) => a.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(base) / size);
}

describe('workload cluster (kube-controller-manager, kube-scheduler, KWOK nodes)', () => {
  let cluster: WorkloadCluster;
  let addon: LoadBalancerAddon;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let discovery: DiscoveryV1Api;

  const kubectl = async (...args: string[]) => (await run(kubectlBinary(), args, { env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath } })).stdout;

  const podsOf = async (selector: string) => (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector })).items;
  const ready = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const runningAndReady = (pods: V1Pod[], count: number) =>
    pods.length === count && pods.every((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running' && ready(p) && p.status.podIP) ? pods : null;

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ nodes: 2, allocatable: { cpu: NODE_CPU, memory: '8Gi', pods: '110' } });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    discovery = cluster.kubeConfig.makeApiClient(DiscoveryV1Api);
    addon = await startLoadBalancerAddon(cluster.kubeConfig);
  }, 180_000);

  afterAll(async () => {
    await addon?.stop();
    await cluster?.stop();
  });

  test("a Deployment makes a ReplicaSet whose Pods run on the fake nodes, Ready, with IPs from their node's Pod CIDR", async () => {
    await kubectl('create', 'deployment', 'web', '--image=registry.example/web:1', '--replicas=3', '--port=8080');

    const replicaSet = await eventually(
      async () => {
        const sets = await apps.listNamespacedReplicaSet({ namespace: NAMESPACE, labelSelector: 'app=web' });
        return sets.items.find((rs) => rs.metadata?.ownerReferences?.some((o) => o.kind === 'Deployment' && o.name === 'web' && o.controller));
      },
      30_000,
      200,
    );
    const pods = await eventually(async () => runningAndReady(await podsOf('app=web'), 3), 60_000, 200);

    const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n]));
    for (const pod of pods) {
      expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'ReplicaSet', name: replicaSet.metadata!.name, controller: true });
      expect(cluster.nodeNames).toContain(pod.spec?.nodeName);
      const podCidr = nodes.get(pod.spec!.nodeName!)!.spec!.podCIDR!;
      expect(inCidr(pod.status!.podIP!, podCidr)).toBe(true);
    }
    expect(new Set(pods.map((p) => p.status!.podIP)).size).toBe(3);

    const deployment = await eventually(
      async () => {
        const d = await apps.readNamespacedDeployment({ name: 'web', namespace: NAMESPACE });
        return d.status?.readyReplicas === 3 && d.status.availableReplicas === 3 ? d : null;
      },
      30_000,
      200,
    );
    expect(deployment.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
  });

  test("the EndpointSlices of a Service list the ready Pods' IPs, and a deleted Pod is replaced and listed instead", async () => {
    await kubectl('expose', 'deployment', 'web', '--port=80', '--target-port=8080');
    /** The ready endpoints, as `pod-name=ip`. */
    const endpoints = async () => {
      const slices = await discovery.listNamespacedEndpointSlice({ namespace: NAMESPACE, labelSelector: 'kubernetes.io/service-name=web' });
      return slices.items
        .flatMap((s) => s.endpoints ?? [])
        .filter((e) => e.conditions?.ready)
        .flatMap((e) => e.addresses.map((ip) => `${e.targetRef?.name}=${ip}`))
        .sort();
    };
    const listed = (pods: V1Pod[]) => pods.map((p) => `${p.metadata!.name}=${p.status!.podIP}`).sort();

    const before = await eventually(async () => runningAndReady(await podsOf('app=web'), 3), 30_000, 200);
    await eventually(async () => JSON.stringify(await endpoints()) === JSON.stringify(listed(before)), 30_000, 200);

    const [victim] = before;
    await core.deleteNamespacedPod({ name: victim.metadata!.name!, namespace: NAMESPACE });
    const after = await eventually(
      async () => {
        const pods = runningAndReady(await podsOf('app=web'), 3);
        return pods && !pods.some((p) => p.metadata!.uid === victim.metadata!.uid) ? pods : null;
      },
      60_000,
      200,
    );
    // The replacement is a new Pod (KWOK may hand it the IP its predecessor freed).
    await eventually(async () => JSON.stringify(await endpoints()) === JSON.stringify(listed(after)), 30_000, 200);
    expect((await endpoints()).some((e) => e.startsWith(`${victim.metadata!.name}=`))).toBe(false);
  });

  test('a Pod that asks for more CPU than any node has stays Pending, PodScheduled=False, reason Unschedulable', async () => {
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'too-big', labels: { app: 'too-big' } },
        spec: { containers: [{ name: 'main', image: 'registry.example/big:1', resources: { requests: { cpu: String(Number(NODE_CPU) * 2) } } }] },
      },
    });
    const condition = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'too-big', namespace: NAMESPACE });
        return pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
      },
      30_000,
      200,
    );
    expect(condition.reason).toBe('Unschedulable');
    expect(condition.message).toMatch(/Insufficient cpu/);
    const pod = await core.readNamespacedPod({ name: 'too-big', namespace: NAMESPACE });
    expect(pod.status?.phase).toBe('Pending');
    expect(pod.spec?.nodeName).toBeUndefined();
  });

  // KWOK plays the kubelet here too: stages added by workload-cluster.ts fail the pull of
  // any image from the unreachable registry, as a real kubelet's pull would fail.
  test('a Pod whose image is in an unreachable registry waits with ErrImagePull, then ImagePullBackOff, and is never Ready', async () => {
    const image = `${UNREACHABLE_REGISTRY}/nothing:1`;
    await core.createNamespacedPod({ namespace: NAMESPACE, body: { metadata: { name: 'unpullable' }, spec: { containers: [{ name: 'main', image }] } } });
    const seen = new Set<string>();
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'unpullable', namespace: NAMESPACE });
        const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
        if (waiting?.reason) seen.add(waiting.reason);
        expect(pod.status?.phase).toBe('Pending');
        expect(ready(pod)).toBe(false);
        if (waiting?.reason === 'ErrImagePull') expect(waiting.message).toContain(image);
        return seen.has('ErrImagePull') && seen.has('ImagePullBackOff');
      },
      30_000,
      100,
    );
    const pod = await core.readNamespacedPod({ name: 'unpullable', namespace: NAMESPACE });
    expect(cluster.nodeNames).toContain(pod.spec?.nodeName);
    expect(pod.status?.podIP).toBeUndefined();
  });

  // The ingress address is written by the test's stand-in for the LoadBalancer add-on
  // (MetalLB or a cloud's controller): no component of the workload cluster assigns one.
  test('a Service of type LoadBalancer gets its ingress IP from the LoadBalancer add-on the test plays', async () => {
    await kubectl('expose', 'deployment', 'web', '--name=web-public', '--type=LoadBalancer', '--port=80', '--target-port=8080');
    const service = await eventually(
      async () => {
        const s = await core.readNamespacedService({ name: 'web-public', namespace: NAMESPACE });
        return s.status?.loadBalancer?.ingress?.[0]?.ip ? s : null;
      },
      30_000,
      200,
    );
    const ip = service.status!.loadBalancer!.ingress![0].ip!;
    expect(inCidr(ip, LOAD_BALANCER_POOL)).toBe(true);
    expect(addon.assigned().get(`${NAMESPACE}/web-public`)).toBe(ip);
    // The rest of a LoadBalancer Service is the real API server's and controllers' work.
    expect(service.spec?.clusterIP).toMatch(/^10\.0\.0\./);
    expect(service.spec?.ports?.[0].nodePort).toBeGreaterThan(0);
    expect(await kubectl('get', 'service', 'web-public', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}')).toBe(ip);
  });
});

/**
 * The operator in cluster mode with its Kubernetes drivers, end to end, as a platform team
 * runs it: REST calls and kubectl against a real control plane (kube-apiserver, etcd,
 * kube-controller-manager, kube-scheduler) whose kubelets KWOK plays, so Pods are
 * scheduled, become Running with IPs, and are garbage-collected with their owners. The
 * test reads the real objects the drivers made. The operator runs as the chart's
 * ServiceAccount with the chart's RBAC (test/helpers/chart.ts): a verb a driver needs and
 * the chart does not grant fails here with the API server's 403.
 */
import { AppsV1Api, CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { CONFIG_KEY } from '../../src/drivers/kubernetes/haproxy-manifests';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { kubectlOn } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { expectOnlyListedCalls, operatorKubeconfigFromChart, teamNamespaceBindingEnv } from '../helpers/chart';

jest.setTimeout(240_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const MANAGED = 'app.kubernetes.io/managed-by=cloudplane';

describe('cluster mode: servers as Pods, load balancers on HAProxy', () => {
  let cluster: WorkloadCluster;
  let t: TestService;
  let core: CoreV1Api;
  let namespace: string;
  let operatorKubeconfig: string;
  let apps: AppsV1Api;
  let addon: LoadBalancerAddon;

  const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);

  /** The Pod of a server, if there is one (404 is an answer here). */
  const podOf = async (id: string): Promise<V1Pod | undefined> => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${id}` });
    return pods.items.find((p) => !p.metadata?.deletionTimestamp);
  };

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    // No MetalLB or cloud here: this plays the LoadBalancer add-on, writing the ingress IP it would.
    addon = await startLoadBalancerAddon(cluster.kubeConfig);
    operatorKubeconfig = operatorKubeconfigFromChart(cluster, cluster.workDir);
    t = await startTestService({
      CLOUDPLANE_STORE: 'kubernetes',
      CLOUDPLANE_KUBECONFIG: operatorKubeconfig,
      ...teamNamespaceBindingEnv(),
      CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
      // A Pod or Deployment deleted by hand must be seen through the drivers' watch of what
      // they made, not through the periodic resync, which is put out of the test's reach.
      CLOUDPLANE_RESYNC_SECONDS: '3600',
      CLOUDPLANE_BACKEND_DRAIN_SECONDS: '1',
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await addon?.stop();
    await cluster?.stop();
  });

  it('chooses the kubernetes drivers of servers and load balancers by default in cluster mode', () => {
    expect(t.service.ctx.drivers.chosen).toMatchObject({ server: 'kubernetes', load_balancer: 'kubernetes' });
  });

  it('a REST create yields a Pod that becomes Running, and the server turns running with the Pod IP', async () => {
    const created = await t.api('POST', '/api/v1/servers', { name: 'web-1', region: 'fra1', plan: 's-2vcpu-4gb' });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    const pod = (await podOf(id))!;
    expect(pod.status?.phase).toBe('Running');
    expect(running.ipv4).toBe(pod.status?.podIP);
    expect(pod.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
    expect(pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Server', controller: true, blockOwnerDeletion: true })]);
    expect(pod.spec?.containers[0].image).toBe('docker.io/library/ubuntu:24.04');
    expect(pod.spec?.containers[0].resources).toMatchObject({ requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '2', memory: '4Gi' } });
  });

  it('stop removes the Pod and keeps the record; start brings it back; reboot replaces it', async () => {
    const { id } = (await t.api('POST', '/api/v1/servers', { name: 'web-2', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    const first = (await podOf(id))!;

    expect((await t.api('POST', `/api/v1/servers/${id}/stop`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/servers/${id}`, 'stopped', 60_000);
    expect(await podOf(id)).toBeUndefined();

    expect((await t.api('POST', `/api/v1/servers/${id}/start`)).status).toBe(200);
    const started = await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    const second = (await podOf(id))!;
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect(started.ipv4).toBe(second.status?.podIP);

    const reboot = await t.api('POST', `/api/v1/servers/${id}/reboot`);
    expect(reboot.status).toBe(200);
    const third = await eventually(
      async () => {
        const pod = await podOf(id);
        const server = (await t.api('GET', `/api/v1/servers/${id}`)).body.data;
        return pod && pod.metadata?.uid !== second.metadata?.uid && server.status === 'running' && server.ipv4 === pod.status?.podIP ? pod : null;
      },
      60_000,
      200,
    );
    expect(third.status?.phase).toBe('Running');
  });

  it("a Pod deleted by hand is recreated at once, through the driver's watch of what it made", async () => {
    const { id } = (await t.api('POST', '/api/v1/servers', { name: 'web-3', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    // Let the server settle (its running event relayed, the passes that follow done), so no
    // pass of its own is under way when the Pod goes: only the watch can bring the next one.
    await eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=server.running`)).body.data.length === 1, 30_000, 200);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const before = (await podOf(id))!;
    await kubectl('delete', 'pod', before.metadata!.name!, '-n', namespace, '--wait=false');
    const after = await eventually(
      async () => {
        const pod = await podOf(id);
        return pod && pod.metadata?.uid !== before.metadata?.uid && pod.status?.phase === 'Running' ? pod : null;
      },
      60_000,
      200,
    );
    await eventually(async () => (await t.api('GET', `/api/v1/servers/${id}`)).body.data.ipv4 === after.status?.podIP, 60_000, 200);
  });

  it('a kubectl-made Server gets its Pod too, and the API serves it', async () => {
    const manifest = {
      apiVersion: 'cloudplane.dev/v1alpha1',
      kind: 'Server',
      metadata: { name: 'from-git', namespace },
      spec: { name: 'from-git', region: 'ams3' },
    };
    await kubectlOn(cluster.kubeconfigPath)(['apply', '-f', '-'], JSON.stringify(manifest));
    const id = await eventually(
      async () =>
        JSON.parse(await kubectl('get', 'servers.cloudplane.dev', 'from-git', '-n', namespace, '-o', 'json')).metadata.labels?.['cloudplane.dev/id'] as
          string | undefined,
      30_000,
      200,
    );
    const running = await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    expect(running.ipv4).toBe((await podOf(id))!.status?.podIP);
  });

  it('deleting a server removes its Pod at once and keeps the record as deleted', async () => {
    const { id } = (await t.api('POST', '/api/v1/servers', { name: 'web-4', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/servers/${id}`, 'running', 60_000);
    const deleted = await t.api('DELETE', `/api/v1/servers/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    await eventually(async () => (await podOf(id)) === undefined, 60_000, 200);
    expect((await t.api('GET', `/api/v1/servers/${id}`)).body.data.status).toBe('deleted');
    const left = await core.listNamespacedPod({ namespace, labelSelector: `${MANAGED},cloudplane.dev/id=${id}` });
    expect(left.items.filter((p) => !p.metadata?.deletionTimestamp)).toEqual([]);
  });
  /** The objects the load balancer driver made for `id`; null for one that is not there. */
  const haproxyObjectsOf = async (id: string) => {
    const name = objectName(id);
    const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));
    return {
      configMap: await read(() => core.readNamespacedConfigMap({ namespace, name })),
      deployment: await read(() => apps.readNamespacedDeployment({ namespace, name })),
      service: await read(() => core.readNamespacedService({ namespace, name })),
    };
  };

  it('a load balancer yields its Deployment, ConfigMap and Service, and turns running with the ingress IP', async () => {
    const created = await t.api('POST', '/api/v1/load-balancers', {
      name: 'front',
      region: 'fra1',
      protocol: 'http',
      port: 80,
      algorithm: 'least_connections',
    });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const running = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', 90_000);
    const { configMap, deployment, service } = await haproxyObjectsOf(id);
    for (const object of [configMap!, deployment!, service!]) {
      expect(object.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
      expect(object.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'LoadBalancer', controller: true })]);
    }
    expect(configMap!.data![CONFIG_KEY]).toContain('balance leastconn');
    expect(service!.spec?.type).toBe('LoadBalancer');
    expect(running.ipv4).toBe(service!.status?.loadBalancer?.ingress?.[0]?.ip);
    expect(running.ipv4).toBe(addon.assigned().get(`${namespace}/${objectName(id)}`));
    // The traffic is read live from the serving Pods' stats, which nothing in KWOK's Pods
    // serves: 503 provider_unavailable, neither a 500 nor counters made up without them.
    const stats = await t.api('GET', `/api/v1/load-balancers/${id}/stats`);
    expect([stats.status, stats.body.error?.code]).toEqual([503, 'provider_unavailable']);
    expect(stats.body.error.message).toMatch(/of its \d serving HAProxy Pods did not give their stats within 2000 ms/);
  });

  it("attach and detach change the rendered configuration to the servers' Pod IPs", async () => {
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'pool', region: 'fra1' })).body.data;
    const server = (await t.api('POST', '/api/v1/servers', { name: 'app-1', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'running', 90_000);
    const { ipv4 } = await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running', 60_000);
    expect(ipv4).toBe((await podOf(server.id))!.status?.podIP);

    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/attach`, { server_id: server.id, port: 8080 })).status).toBe(200);
    const rolled = await eventually(
      async () => {
        const { configMap, deployment } = await haproxyObjectsOf(lb.id);
        return configMap?.data?.[CONFIG_KEY].includes(`${ipv4}:8080`) ? deployment : null;
      },
      60_000,
      200,
    );
    // The Pod template carries the configuration's hash, so the change rolls out.
    expect(Object.keys(rolled!.spec!.template.metadata!.annotations ?? {})).toEqual(expect.arrayContaining([expect.stringMatching(/config/)]));
    // Nothing answers health checks in KWOK's Pods (no container runs), so HAProxy's stats,
    // read at the Pod IPs, cannot be had: the backend is reported unhealthy.
    const attached = await eventually(
      async () => {
        const record = (await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data;
        return record.backends.length === 1 ? record : null;
      },
      60_000,
      200,
    );
    expect(attached.backends[0]).toMatchObject({ server_id: server.id, port: 8080, status: 'unhealthy' });

    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/detach`, { server_id: server.id })).status).toBe(200);
    await eventually(
      async () => {
        const { configMap } = await haproxyObjectsOf(lb.id);
        return configMap && !configMap.data![CONFIG_KEY].includes(`${ipv4}:8080`);
      },
      60_000,
      200,
    );
    await eventually(async () => (await t.api('GET', `/api/v1/load-balancers/${lb.id}`)).body.data.backends.length === 0, 60_000, 200);
  });

  it('a Deployment deleted by hand is recreated', async () => {
    const { id } = (await t.api('POST', '/api/v1/load-balancers', { name: 'sturdy', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', 90_000);
    const before = (await haproxyObjectsOf(id)).deployment!;
    await kubectl('delete', 'deployment', objectName(id), '-n', namespace, '--wait=false');
    const after = await eventually(
      async () => {
        const { deployment } = await haproxyObjectsOf(id);
        return deployment && deployment.metadata?.uid !== before.metadata?.uid && !deployment.metadata?.deletionTimestamp ? deployment : null;
      },
      60_000,
      200,
    );
    expect(after.metadata?.labels?.['cloudplane.dev/id']).toBe(id);
  });

  it('a kubectl-made LoadBalancer gets the same objects and runs', async () => {
    const manifest = {
      apiVersion: 'cloudplane.dev/v1alpha1',
      kind: 'LoadBalancer',
      metadata: { name: 'edge-from-git', namespace },
      spec: { name: 'edge-from-git', region: 'ams3', protocol: 'tcp', port: 5432 },
    };
    await kubectlOn(cluster.kubeconfigPath)(['apply', '-f', '-'], JSON.stringify(manifest));
    const id = await eventually(
      async () =>
        JSON.parse(await kubectl('get', 'loadbalancers.cloudplane.dev', 'edge-from-git', '-n', namespace, '-o', 'json')).metadata.labels?.[
          'cloudplane.dev/id'
        ] as string | undefined,
      30_000,
      200,
    );
    const running = await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', 90_000);
    const { configMap, service } = await haproxyObjectsOf(id);
    expect(configMap!.data![CONFIG_KEY]).toContain('mode tcp');
    expect(running.ipv4).toBe(service!.status?.loadBalancer?.ingress?.[0]?.ip);
  });

  it('deleting a load balancer removes everything it owned and keeps the record as deleted', async () => {
    const { id } = (await t.api('POST', '/api/v1/load-balancers', { name: 'short-lived', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', 90_000);
    const deleted = await t.api('DELETE', `/api/v1/load-balancers/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    await eventually(async () => Object.values(await haproxyObjectsOf(id)).every((o) => o === null), 60_000, 200);
    expect((await t.api('GET', `/api/v1/load-balancers/${id}`)).body.data.status).toBe('deleted');
  });

  it('a server that cannot be scheduled fails with the reason once the start timeout passes', async () => {
    // A plan no KWOK node can hold (each offers 16 CPUs): the scheduler leaves the Pod Pending, Unschedulable.
    // The operator again with plans of its own: the one before hands its leadership over as it stops.
    const key = t.key;
    await t.stop();
    const small = await startTestService({
      CLOUDPLANE_BOOTSTRAP_API_KEY: key,
      CLOUDPLANE_STORE: 'kubernetes',
      CLOUDPLANE_KUBECONFIG: operatorKubeconfig,
      ...teamNamespaceBindingEnv(),
      CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
      CLOUDPLANE_SERVER_PLANS: JSON.stringify({
        's-1vcpu-1gb': { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        's-1vcpu-2gb': { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1', memory: '2Gi' } },
        's-2vcpu-4gb': { requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '2', memory: '4Gi' } },
        's-4vcpu-8gb': { requests: { cpu: '4', memory: '8Gi' }, limits: { cpu: '4', memory: '8Gi' } },
        's-8vcpu-16gb': { requests: { cpu: '500', memory: '16Gi' }, limits: { cpu: '500', memory: '16Gi' } },
      }),
      CLOUDPLANE_SERVER_START_TIMEOUT_SECONDS: '3',
    });
    t = small;
    const { id } = (await small.api('POST', '/api/v1/servers', { name: 'too-big', region: 'fra1', plan: 's-8vcpu-16gb' })).body.data;
    const failed = await waitForStatus(small, `/api/v1/servers/${id}`, 'failed', 60_000);
    expect(failed.status_reason).toMatch(/^Provisioning failed: .*(schedul|Insufficient cpu)/i);
  });

  it('made only calls the chart grants, none refused, and held its Lease in the system namespace alone', () => {
    const calls = expectOnlyListedCalls(cluster);
    const lease = calls.filter((c) => c.group === 'coordination.k8s.io');
    expect(lease.map((c) => c.verb)).toEqual(expect.arrayContaining(['get', 'update']));
    expect(new Set(lease.map((c) => c.namespace))).toEqual(new Set([SYSTEM_NAMESPACE]));
    expect(lease.every((c) => c.code! < 300 || c.code === 404 || c.code === 409)).toBe(true);
    // Both drivers wrote in the team's namespace (the ones above would have failed without it).
    const made = new Set(calls.filter((c) => c.namespace === namespace && ['create', 'patch'].includes(c.verb)).map((c) => c.resource));
    expect([...made].sort()).toEqual(expect.arrayContaining(['configmaps', 'deployments', 'pods', 'services']));
  });
});

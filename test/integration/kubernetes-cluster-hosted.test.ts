/**
 * Kubernetes clusters in cluster mode with the kubernetes driver (a hosted control plane
 * in the team's namespace), on a real control plane whose kubelets KWOK plays
 * (test/helpers/workload-cluster.ts), the operator running under the chart's RBAC. The
 * test reads the real objects the driver made, then plays the rest of a node for the
 * control plane's Pods with real software, as the database test plays PostgreSQL's:
 * - a PersistentVolume for etcd's claim (no provisioner here), so its Pod is scheduled;
 * - the kubelet: for the etcd, kube-apiserver and KWOK Pods, the real `etcd`,
 *   `kube-apiserver` and `kwok` that make test builds, each run with its Pod's own command
 *   and args (`$(POD_IP)` and `$(POD_NAME)` from the Pod), its mounted Secrets' and
 *   ConfigMaps' keys written to files (a mount path in an argument is read as the
 *   directory those files are in: the mounts' play) and its claim a directory, in a
 *   network namespace of its own at the Pod's IP;
 * - the Pod network, cluster DNS and kube-proxy: a router namespace that joins the Pods
 *   and the test's own namespace (where the operator runs, as in a cluster it runs in a
 *   Pod), each Pod's /etc/hosts naming the cluster's Pods and its Service (what cluster
 *   DNS answers), and the API Service's ClusterIP routed to the API server's Pod, where it
 *   is a local address (what kube-proxy's rules do). The endpoint the API gives is that
 *   ClusterIP, used as it is: kubectl and the operator reach it the same way.
 * kube-controller-manager and kube-scheduler are not run (KWOK's nodes run no Pods for them
 * to place or manage): their Deployments' specs are checked instead.
 * Then: the cluster runs, kubectl with the API's kubeconfig lists exactly the pools' nodes,
 * scaling a pool changes them, a rotated kubeconfig stops the old token, an API server that
 * stops leaves the cluster degraded until it is back, and delete removes every object and
 * claim.
 */
import { ChildProcess, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { X509Certificate } from 'node:crypto';
import { AppsV1Api, CoreV1Api, V1ConfigMap, V1Deployment, V1PersistentVolumeClaim, V1Pod, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { CONNECTION_KEYS, PKI_KEYS } from '../../src/drivers/kubernetes/kubernetes-cluster-manifests';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { kwokTool, startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { etcdBinary, kubeApiServerBinary, kubectlBinary } from '../helpers/kube-apiserver';
import { expectOnlyListedCalls, NAMESPACE as SYSTEM_NAMESPACE } from '../helpers/chart';
import { Netns, netnsSet, NetnsSet } from '../helpers/netns';
import { spawnTracked } from '../helpers/processes';
import { findInFiles } from '../helpers/secret-scan';

jest.setTimeout(400_000);

const exec = promisify(execFile);
const STORAGE_CLASS = 'etcd-test';
const PATCH = 'v1.34.4';
/** The router's and the test's addresses on the played Pod network (one /31 per jest worker). */
const WORKER = Number(process.env.JEST_WORKER_ID ?? '1') % 200;
const HOST_ADDRESS = `100.64.${WORKER}.0`;
const ROUTER_ADDRESS = `100.64.${WORKER}.1`;

const decoded = (secret: V1Secret, key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

describe('cluster mode: Kubernetes clusters as a hosted control plane', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let t: TestService;
  let namespace: string;
  let netns: NetnsSet;
  let router: Netns;
  let work: string;
  let links = 0;
  const hostRoutes: string[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // Found (or built) before anything starts, so a missing tool fails fast, naming the script.
    etcdBinary();
    kubeApiServerBinary();
    kwokTool();
    kubectlBinary();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-k8shost-'));
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    t = await startServiceUnderChartRbac(cluster, {
      CLOUDPLANE_DRIVER_KUBERNETES_CLUSTER: 'kubernetes',
      CLOUDPLANE_KUBERNETES_STORAGE_CLASS: STORAGE_CLASS,
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
    // The Pod network's router, joined to the test's own namespace.
    netns = netnsSet();
    router = netns.make('net');
    await router.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    const [hostEnd, routerEnd] = veth();
    ip('link', 'set', routerEnd, 'netns', router.name);
    ip('addr', 'add', HOST_ADDRESS, 'peer', ROUTER_ADDRESS, 'dev', hostEnd);
    ip('link', 'set', hostEnd, 'up');
    ip('-n', router.name, 'addr', 'add', ROUTER_ADDRESS, 'peer', HOST_ADDRESS, 'dev', routerEnd);
    ip('-n', router.name, 'link', 'set', routerEnd, 'up');
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    for (const route of hostRoutes) {
      try {
        ip('route', 'del', route);
      } catch {
        // Gone with the router's link.
      }
    }
    netns?.destroy();
    await t?.stop();
    await cluster?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  /** A veth pair's two names (at most 15 bytes each). */
  function veth(): [string, string] {
    const base = `cph${process.pid % 100_000}${++links}`.slice(0, 13);
    ip('link', 'add', `${base}a`, 'type', 'veth', 'peer', 'name', `${base}b`);
    return [`${base}a`, `${base}b`];
  }

  /** A Pod's network namespace at its IP, reached through the router; `also`: addresses routed to it (a Service's ClusterIP). */
  async function podNetwork(pod: V1Pod, also: string[] = []): Promise<Netns> {
    const podIp = pod.status!.podIP!;
    const ns = netns.make(`p${links}`);
    const [routerEnd, podEnd] = veth();
    ip('link', 'set', routerEnd, 'netns', router.name);
    ip('link', 'set', podEnd, 'netns', ns.name);
    ip('-n', router.name, 'addr', 'add', ROUTER_ADDRESS, 'peer', podIp, 'dev', routerEnd);
    ip('-n', router.name, 'link', 'set', routerEnd, 'up');
    ip('-n', ns.name, 'addr', 'add', podIp, 'peer', ROUTER_ADDRESS, 'dev', podEnd);
    ip('-n', ns.name, 'link', 'set', podEnd, 'up');
    ip('-n', ns.name, 'route', 'add', 'default', 'via', ROUTER_ADDRESS);
    for (const address of [podIp, ...also]) {
      ip('route', 'add', `${address}/32`, 'via', ROUTER_ADDRESS);
      hostRoutes.push(`${address}/32`);
    }
    for (const address of also) {
      ip('-n', router.name, 'route', 'add', `${address}/32`, 'via', podIp);
      ip('-n', ns.name, 'addr', 'add', `${address}/32`, 'dev', 'lo');
    }
    return ns;
  }

  const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));

  const objectsOf = async (id: string) => {
    const name = objectName(id);
    const secret = (suffix: string) => read<V1Secret>(() => core.readNamespacedSecret({ namespace, name: `${name}-${suffix}` }));
    const deployment = (suffix: string) => read<V1Deployment>(() => apps.readNamespacedDeployment({ namespace, name: `${name}-${suffix}` }));
    return {
      pki: await secret('pki'),
      encryption: await secret('encryption'),
      controllerManagerConfig: await secret('controller-manager'),
      schedulerConfig: await secret('scheduler'),
      kwokConfig: await secret('kwok'),
      connection: await secret('kubeconfig'),
      kwokStages: await read<V1ConfigMap>(() => core.readNamespacedConfigMap({ namespace, name: `${name}-kwok` })),
      etcdService: await read<V1Service>(() => core.readNamespacedService({ namespace, name: `${name}-etcd` })),
      etcd: await read<V1StatefulSet>(() => apps.readNamespacedStatefulSet({ namespace, name: `${name}-etcd` })),
      apiService: await read<V1Service>(() => core.readNamespacedService({ namespace, name })),
      apiserver: await deployment('apiserver'),
      controllerManager: await deployment('controller-manager'),
      scheduler: await deployment('scheduler'),
      kwok: await deployment('kwok'),
    };
  };
  const claimOf = (id: string) =>
    read<V1PersistentVolumeClaim>(() => core.readNamespacedPersistentVolumeClaim({ namespace, name: `data-${objectName(id)}-etcd-0` }));

  /** The Pod of `component` once it has an IP (KWOK gives it one as it plays it Running). */
  const podOf = (id: string, component: string) =>
    eventually(
      async () => {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${id},app.kubernetes.io/component=${component}` });
        return pods.items.find((pod) => pod.status?.podIP && !pod.metadata?.deletionTimestamp) ?? null;
      },
      90_000,
      250,
    );

  /**
   * Plays the kubelet for `pod`: its volumes' files under the test's directory, its
   * command's program the one make test builds, its args with the Pod's variables and
   * mounts, run in `ns` with `hosts` as its /etc/hosts. Returns the process.
   */
  async function runPod(pod: V1Pod, ns: Netns, hosts: string, programs: Record<string, string>, claimDir?: string): Promise<ChildProcess> {
    const podName = pod.metadata!.name!;
    const dir = path.join(work, podName);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const container = pod.spec!.containers[0];
    const mounts = new Map<string, string>();
    for (const volume of pod.spec!.volumes ?? []) {
      const volumeDir = path.join(dir, volume.name);
      fs.mkdirSync(volumeDir, { recursive: true, mode: 0o700 });
      let data: Record<string, string> = {};
      let items: Array<{ key: string; path: string }> | undefined;
      if (volume.secret) {
        const secret = (await core.readNamespacedSecret({ namespace, name: volume.secret.secretName! })) as V1Secret;
        data = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
        items = volume.secret.items;
      } else if (volume.configMap) {
        data = (await core.readNamespacedConfigMap({ namespace, name: volume.configMap.name! })).data ?? {};
        items = volume.configMap.items;
      }
      for (const item of items ?? Object.keys(data).map((key) => ({ key, path: key })))
        fs.writeFileSync(path.join(volumeDir, item.path), data[item.key] ?? '', { mode: 0o600 });
      mounts.set(volume.name, volumeDir);
    }
    // The claim's volume (StatefulSet Pods name it after the template).
    if (claimDir) mounts.set('data', claimDir);
    const byPath = (container.volumeMounts ?? []).map((m) => ({ from: m.mountPath, to: mounts.get(m.name)! })).sort((a, b) => b.from.length - a.from.length);
    const env: Record<string, string> = { POD_NAME: podName, POD_IP: pod.status!.podIP! };
    const args = [...(container.command ?? []).slice(1), ...(container.args ?? [])].map((arg) => {
      let out = arg.replace(/\$\((\w+)\)/g, (_, name: string) => env[name] ?? '');
      for (const { from, to } of byPath)
        out = out
          .split(`${from}/`)
          .join(`${to}/`)
          .replace(new RegExp(`=${from}$`), `=${to}`);
      return out;
    });
    const program = programs[container.command![0]];
    const hostsFile = path.join(dir, 'hosts');
    fs.writeFileSync(hostsFile, hosts);
    const log = fs.openSync(path.join(dir, 'log'), 'a');
    const child = spawnTracked(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount --bind "$1" /etc/hosts && shift && exec "$@"',
        'sh',
        hostsFile,
        program,
        ...args,
      ],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    children.push(child);
    return child;
  }

  const kubectl = async (kubeconfig: string, ...args: string[]) => {
    const file = path.join(work, `kubeconfig-${Date.now()}-${Math.random()}`);
    fs.writeFileSync(file, kubeconfig, { mode: 0o600 });
    try {
      return (await exec(kubectlBinary(), ['--kubeconfig', file, '--request-timeout=10s', ...args], { timeout: 30_000 })).stdout;
    } finally {
      fs.rmSync(file, { force: true });
    }
  };
  const nodeNames = async (kubeconfig: string) =>
    (await kubectl(kubeconfig, 'get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').filter(Boolean).sort();

  it('chooses the kubernetes driver for Kubernetes clusters in cluster mode', () => {
    expect(t.service.ctx.drivers.chosen.kubernetes_cluster).toBe('kubernetes');
  });

  it('makes the control plane, runs on real etcd and kube-apiserver at its Pods, serves kubectl its pools’ nodes, rotates, degrades and deletes everything', async () => {
    const created = await t.api('POST', '/api/v1/kubernetes-clusters', {
      name: 'hosted',
      region: 'fra1',
      node_pools: [
        { name: 'workers', size: 's-2vcpu-4gb', count: 2, labels: { tier: 'web' }, taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }] },
      ],
    });
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const name = objectName(id);

    const made = await eventually(
      async () => {
        const objects = await objectsOf(id);
        return Object.values(objects).every(Boolean) ? objects : null;
      },
      60_000,
      250,
    );
    for (const object of Object.values(made)) {
      expect(object!.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
      expect(object!.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'KubernetesCluster', controller: true })]);
    }
    // etcd: one member, its claim of the configured class, deleted with it.
    expect(made.etcd!.spec).toMatchObject({
      replicas: 1,
      serviceName: `${name}-etcd`,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
    });
    expect(made.etcd!.spec!.template.spec!.containers[0].image).toBe('registry.k8s.io/etcd:3.5.21-0');
    expect(made.etcdService!.spec).toMatchObject({ clusterIP: 'None' });
    expect(await claimOf(id)).toMatchObject({ spec: { storageClassName: STORAGE_CLASS, resources: { requests: { storage: '4Gi' } } } });
    // The control plane's images of the newest minor's release, one API server (no ha).
    expect(made.apiserver!.spec!.replicas).toBe(1);
    const images = [made.apiserver, made.controllerManager, made.scheduler].map((d) => d!.spec!.template.spec!.containers[0].image);
    expect(images).toEqual([
      `registry.k8s.io/kube-apiserver:${PATCH}`,
      `registry.k8s.io/kube-controller-manager:${PATCH}`,
      `registry.k8s.io/kube-scheduler:${PATCH}`,
    ]);
    expect(made.kwok!.spec!.template.spec!.containers[0].image).toBe('registry.k8s.io/kwok/kwok:v0.8.0');
    // The controller manager and the scheduler (not run here): their kubeconfigs from their Secrets, leader-elected, the CA's key for the controller manager's signer.
    const cm = made.controllerManager!.spec!.template.spec!;
    expect(cm.containers[0].args).toEqual(
      expect.arrayContaining([
        '--kubeconfig=/etc/kubernetes/kubeconfig/kubeconfig',
        '--leader-elect=true',
        '--use-service-account-credentials=true',
        '--cluster-signing-key-file=/etc/kubernetes/pki/ca.key',
        '--service-account-private-key-file=/etc/kubernetes/pki/sa.key',
      ]),
    );
    expect(cm.volumes).toEqual(
      expect.arrayContaining([expect.objectContaining({ secret: expect.objectContaining({ secretName: `${name}-controller-manager` }) })]),
    );
    const scheduler = made.scheduler!.spec!.template.spec!;
    expect(scheduler.containers[0].args).toEqual(expect.arrayContaining(['--kubeconfig=/etc/kubernetes/kubeconfig/kubeconfig', '--leader-elect=true']));
    expect(scheduler.volumes).toEqual([expect.objectContaining({ secret: expect.objectContaining({ secretName: `${name}-scheduler` }) })]);
    for (const [component, secret] of [
      ['controller-manager', made.controllerManagerConfig],
      ['scheduler', made.schedulerConfig],
    ] as const) {
      const kubeconfig = decoded(secret!, 'kubeconfig');
      expect(kubeconfig).toContain(`server: https://${name}.${namespace}.svc:6443`);
      expect(new X509Certificate(decoded(secret!, 'client.crt')).subject).toBe(`CN=system:kube-${component}`);
    }
    // The serving certificate names the Service's DNS names and its ClusterIP, signed by the cluster's authority.
    const clusterIp = made.apiService!.spec!.clusterIP!;
    const ca = new X509Certificate(decoded(made.pki!, PKI_KEYS.caCert));
    const serving = new X509Certificate(decoded(made.pki!, PKI_KEYS.apiserverCert));
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkIP(clusterIp)).toBe(clusterIp);
    expect(serving.checkHost(`${name}.${namespace}.svc`)).toBeTruthy();

    // The token is in the connection Secret alone: no ConfigMap, Deployment or StatefulSet holds it.
    const token = /token: (\S+)/.exec(decoded(made.connection!, CONNECTION_KEYS.kubeconfig))?.[1] ?? '';
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    for (const object of [made.kwokStages, made.apiserver, made.controllerManager, made.scheduler, made.kwok, made.etcd, made.pki])
      expect(JSON.stringify(object)).not.toContain(token);

    // The node's play: a volume for etcd's claim, then etcd, kube-apiserver and KWOK at their Pods.
    await core.createPersistentVolume({
      body: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `pv-${name}` },
        spec: {
          capacity: { storage: '10Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: STORAGE_CLASS,
          hostPath: { path: `/tmp/${name}` },
        },
      },
    });
    const etcdPod = await podOf(id, 'etcd');
    const apiPod = await podOf(id, 'kube-apiserver');
    const kwokPod = await podOf(id, 'kwok');
    const hosts = [
      '127.0.0.1 localhost',
      `${etcdPod.status!.podIP} ${etcdPod.metadata!.name}.${name}-etcd.${namespace}.svc`,
      `${clusterIp} ${name}.${namespace}.svc`,
      '',
    ].join('\n');
    const programs = { etcd: etcdBinary(), 'kube-apiserver': kubeApiServerBinary(), kwok: kwokTool().binary };
    const etcdData = path.join(work, 'etcd-claim');
    fs.mkdirSync(etcdData, { mode: 0o700 });
    await runPod(etcdPod, await podNetwork(etcdPod), hosts, programs, etcdData);
    const apiNetwork = await podNetwork(apiPod, [clusterIp]);
    let apiserver = await runPod(apiPod, apiNetwork, hosts, programs);
    await runPod(kwokPod, await podNetwork(kwokPod), hosts, programs);

    const running = await waitForStatus(t, `/api/v1/kubernetes-clusters/${id}`, 'running', 180_000);
    expect(running).toMatchObject({ endpoint: `https://${clusterIp}:6443`, version: '1.34' });
    await eventually(async () => {
      const record = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}`)).body.data;
      return record.node_pools[0].ready_nodes === 2;
    }, 120_000);

    // kubectl with the API's kubeconfig, as it is: the ClusterIP endpoint, the cluster's authority, the bootstrap token.
    const kubeconfig = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}/kubeconfig`)).body as string;
    expect(kubeconfig).toContain(`server: https://${clusterIp}:6443`);
    expect(kubeconfig).toContain(token);
    expect(kubeconfig).not.toContain('insecure-skip-tls-verify');
    expect(await nodeNames(kubeconfig)).toEqual(['workers-0', 'workers-1']);
    const worker = JSON.parse(await kubectl(kubeconfig, 'get', 'node', 'workers-1', '-o', 'json'));
    expect(worker.metadata.labels).toMatchObject({ tier: 'web', 'cloudplane.dev/node-pool': 'workers' });
    expect(worker.spec.taints).toEqual(expect.arrayContaining([{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }]));

    // Scaling the pool changes the nodes.
    expect((await t.api('PATCH', `/api/v1/kubernetes-clusters/${id}/node-pools/workers`, { count: 3 })).status).toBe(200);
    await eventually(async () => (await nodeNames(kubeconfig)).join(' ') === 'workers-0 workers-1 workers-2', 120_000, 500);

    // A rotated kubeconfig: the new token works, the old one is refused; the connection Secret holds the new one.
    expect((await t.api('POST', `/api/v1/kubernetes-clusters/${id}/kubeconfig/rotate`)).status).toBe(200);
    const rotated = (await t.api('GET', `/api/v1/kubernetes-clusters/${id}/kubeconfig`)).body as string;
    expect(rotated).not.toBe(kubeconfig);
    await eventually(
      async () => {
        try {
          await nodeNames(kubeconfig);
          return false;
        } catch (err) {
          return /Unauthorized|must be logged in/.test(String(err));
        }
      },
      120_000,
      500,
    );
    expect(await nodeNames(rotated)).toHaveLength(3);
    const newToken = /token: (\S+)/.exec(rotated)?.[1] ?? '';
    await eventually(async () => decoded((await objectsOf(id)).connection!, CONNECTION_KEYS.kubeconfig).includes(newToken), 60_000, 500);
    // Neither token is in a file the control plane's processes wrote (etcd holds Secrets encrypted) nor their logs.
    expect(
      findInFiles(work, [
        { label: 'token', value: token },
        { label: 'rotated token', value: newToken },
      ]),
    ).toEqual([]);

    // The API server stops answering: degraded, saying so; back, running again.
    apiserver.kill('SIGKILL');
    const degraded = await waitForStatus(t, `/api/v1/kubernetes-clusters/${id}`, 'degraded', 90_000);
    expect(degraded.status_reason).toMatch(/^The API server does not answer/);
    apiserver = await runPod(apiPod, apiNetwork, hosts, programs);
    const again = await waitForStatus(t, `/api/v1/kubernetes-clusters/${id}`, 'running', 120_000);
    expect(again.status_reason).toBeNull();

    // Delete removes every object it made, and etcd's claim.
    expect((await t.api('DELETE', `/api/v1/kubernetes-clusters/${id}`)).status).toBe(202);
    await waitForStatus(t, `/api/v1/kubernetes-clusters/${id}`, 'deleted', 120_000);
    await eventually(async () => Object.values(await objectsOf(id)).every((o) => o === null) && (await claimOf(id)) === null, 60_000, 250);
  });

  it('made only calls the chart grants, none refused: the StatefulSet, Deployments, Services, Secrets and ConfigMap applied', () => {
    const calls = expectOnlyListedCalls(cluster);
    const applied = new Set(calls.filter((c) => c.verb === 'patch' && c.namespace === namespace).map((c) => c.resource));
    expect([...applied]).toEqual(expect.arrayContaining(['statefulsets', 'deployments', 'services', 'secrets', 'configmaps']));
  });
});

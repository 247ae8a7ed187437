/**
 * The HAProxy load balancer driver on a control plane that runs workloads without
 * kubelets (test/helpers/workload-cluster.ts): kube-apiserver, kube-controller-manager,
 * kube-scheduler and KWOK. The driver is driven directly, the way the reconciler drives
 * it: observe first, then create or update, carrying the ExternalRecord it returns. The
 * Deployments, ReplicaSets and Pods, the rollouts and the garbage collection are the real
 * controllers' work.
 *
 * Two things no real component here does: nothing runs HAProxy in the Pods (KWOK only
 * plays their lifecycle, so the stats the driver reads at each Pod's IP never answer and
 * every backend is reported not up), and nothing assigns a LoadBalancer Service its
 * address: test/helpers/load-balancer-addon.ts plays MetalLB by writing the Service's
 * status.loadBalancer.ingress as MetalLB would. The traffic test plays the kubelet for
 * its Pods instead: real HAProxy (Debian's) runs the ConfigMap's configuration in a network
 * namespace carrying each Pod's IP, and real requests go through it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, V1Deployment } from '@kubernetes/client-node';
import pino from 'pino';
import { HaproxyLoadBalancerDriver } from '../../src/drivers/kubernetes/load-balancer-haproxy';
import { DataPlaneUnavailable } from '../../src/drivers/load-balancer';
import type { DesiredBackend, LoadBalancerDesired, LoadBalancerOutputs, BackendHealth } from '../../src/drivers/load-balancer';
import { CONFIG_HASH_ANNOTATION, CERTIFICATE_VERSION_ANNOTATION, CONFIG_KEY, FRONTEND_CONTAINER_PORT } from '../../src/drivers/kubernetes/haproxy-manifests';
import { isServing } from '../../src/drivers/kubernetes/deployed-pods';
import type { Managed, Observation, Owner } from '../../src/drivers/types';
import { newId } from '../../src/lib/ids';
import { API_VERSION, GROUP, VERSION, namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { operatorKubeconfigFromChart, teamNamespaceAsTheOperatorMakesIt } from '../helpers/chart';
import { haproxyBinary, makeTestCertificate, run } from '../helpers/haproxy';
import { netnsSet } from '../helpers/netns';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { eventually } from '../helpers/service';
import { startWorkloadCluster, UNREACHABLE_REGISTRY, WorkloadCluster } from '../helpers/workload-cluster';
import { desiredLoadBalancer } from '../helpers/load-balancer-desired';

// Each wait below gives up well before the test does, so a failure shows its last error.
jest.setTimeout(120_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const team = newId('team');
const namespace = namespaceOfTeam(team, SYSTEM_NAMESPACE);

let cluster: WorkloadCluster;
let addon: LoadBalancerAddon;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let driver: HaproxyLoadBalancerDriver;
let operatorKubeConfig: KubeConfig;

beforeAll(async () => {
  // The CRDs before the controller manager, so its garbage collector knows the owners' kind.
  cluster = await startWorkloadCluster({ crds: true });
  addon = await startLoadBalancerAddon(cluster.kubeConfig);
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  // As the operator makes a team's namespace: its rights there, and nowhere else.
  teamNamespaceAsTheOperatorMakesIt(cluster, namespace);
  // The driver runs with exactly the rights the chart grants the operator: a verb it lacks fails here with a 403.
  operatorKubeConfig = new KubeConfig();
  operatorKubeConfig.loadFromFile(operatorKubeconfigFromChart(cluster, cluster.workDir));
  driver = new HaproxyLoadBalancerDriver({
    kubeConfig: operatorKubeConfig,
    systemNamespace: SYSTEM_NAMESPACE,
    logger: pino({ level: 'silent' }),
    haproxy: { replicas: 2 },
    // Nothing answers at a KWOK Pod's IP: each read gives up soon.
    statsTimeoutMs: 300,
    progressPollMs: 100,
  });
}, 180_000);

afterAll(async () => {
  await addon?.stop();
  await cluster?.stop();
});

type LoadBalancerObservation = Observation<LoadBalancerOutputs, BackendHealth[]>;

/** A load balancer's custom resource, as the store or kubectl makes it: the owner of what the driver makes. */
async function customResource(id: string, desired: LoadBalancerDesired): Promise<Owner> {
  const { backends: _backends, ...spec } = desired;
  const made = (await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: 'loadbalancers',
    body: {
      apiVersion: API_VERSION,
      kind: 'LoadBalancer',
      metadata: { name: objectName(id), labels: { [`${GROUP}/id`]: id } },
      spec: { ...spec, backends: [] },
    },
  })) as { metadata: { name: string; uid: string } };
  return { apiVersion: API_VERSION, kind: 'LoadBalancer', name: made.metadata.name, uid: made.metadata.uid };
}

function backend(address: string, port = 8080, draining = false): DesiredBackend {
  return { server_id: newId('svr'), port, address, draining, drain_until: draining ? new Date(Date.now() + 60_000).toISOString() : null };
}

function spec(overrides: Partial<LoadBalancerDesired> = {}): LoadBalancerDesired {
  return desiredLoadBalancer({ backends: [backend('10.244.1.10'), backend('10.244.1.11')], ...overrides });
}

async function managed(desired: LoadBalancerDesired): Promise<Managed<LoadBalancerDesired>> {
  const id = newId('lb');
  return { id, team, generation: 1, desired, external: null, owner: await customResource(id, desired) };
}

/**
 * One pass of the reconciler: observe, then create what is absent or update what differs,
 * keeping what the driver returns as the resource's external record.
 */
async function reconcileOnce(resource: Managed<LoadBalancerDesired>): Promise<LoadBalancerObservation> {
  const observed = await driver.observe(resource);
  if (!observed.exists) resource.external = (await driver.create(resource)).external;
  else if (!observed.upToDate) resource.external = (await driver.update(resource)).external;
  return observed;
}

/** Passes until the observation satisfies `done`. */
async function reconcileUntil(
  resource: Managed<LoadBalancerDesired>,
  done: (o: LoadBalancerObservation) => boolean,
  timeoutMs = 45_000,
): Promise<LoadBalancerObservation> {
  return eventually(
    async () => {
      const observed = await reconcileOnce(resource);
      return done(observed) ? observed : null;
    },
    timeoutMs,
    100,
  );
}

const readyAndCurrent = (o: LoadBalancerObservation) => o.exists && o.ready && o.upToDate;

async function objectsOf(resource: Managed<LoadBalancerDesired>) {
  const name = objectName(resource.id);
  const [configMap, deployment, service] = await Promise.all([
    core.readNamespacedConfigMap({ name, namespace }).catch(() => null),
    apps.readNamespacedDeployment({ name, namespace }).catch(() => null),
    core.readNamespacedService({ name, namespace }).catch(() => null),
  ]);
  return { configMap, deployment, service };
}

const configOf = async (resource: Managed<LoadBalancerDesired>) => (await objectsOf(resource)).configMap?.data?.[CONFIG_KEY] ?? '';
const serverLines = (config: string) =>
  config
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('server '));

/** The rollout is over: every Pod runs the template of the Deployment's current generation. */
function rolledOut(deployment: V1Deployment | null, replicas: number): boolean {
  const s = deployment?.status;
  return Boolean(
    deployment &&
    s?.observedGeneration === deployment.metadata?.generation &&
    s?.updatedReplicas === replicas &&
    s?.replicas === replicas &&
    s?.availableReplicas === replicas,
  );
}

describe('HAProxy load balancer driver (workload cluster)', () => {
  it('makes a ConfigMap, Deployment and Service, owned and labelled, and is ready with the ingress address', async () => {
    const resource = await managed(spec());
    expect(await driver.observe(resource)).toEqual({ exists: false });

    const observed = await reconcileUntil(resource, readyAndCurrent);
    const { configMap, deployment, service } = await objectsOf(resource);
    // What it applied reads back as up to date: no pass rewrites it.
    for (let pass = 0; pass < 3; pass += 1) expect(await driver.observe(resource)).toMatchObject({ upToDate: true });
    for (const object of [configMap, deployment, service]) {
      expect(object?.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': resource.id });
      expect(object?.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ apiVersion: API_VERSION, kind: 'LoadBalancer', name: resource.owner!.name, uid: resource.owner!.uid, controller: true }),
      ]);
    }
    // The configuration lists the backends' addresses.
    const [first, second] = resource.desired.backends;
    expect(serverLines(configMap!.data![CONFIG_KEY])).toEqual(
      [`server ${first.server_id}-8080 10.244.1.10:8080 check`, `server ${second.server_id}-8080 10.244.1.11:8080 check`].sort(),
    );
    expect(deployment!.spec!.template.metadata!.annotations![CONFIG_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{16}$/);
    expect(deployment!.spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(service!.spec).toMatchObject({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      ports: [expect.objectContaining({ port: 80, targetPort: 'frontend' })],
    });

    // The address the add-on (playing MetalLB) gave the Service.
    const assigned = addon.assigned().get(`${namespace}/${objectName(resource.id)}`);
    expect(assigned).toMatch(/^198\.51\.100\.\d+$/);
    expect(observed).toMatchObject({ exists: true, ready: true, upToDate: true, outputs: { ipv4: assigned }, failure: null, rejected: null });
    // KWOK's Pods run no HAProxy: no stats answer, so no backend is up.
    expect(observed.exists && observed.observed).toEqual(resource.desired.backends.map((b) => ({ server_id: b.server_id, port: b.port, up: false })));
    expect(driver.health()).toMatchObject({ state: 'connected', reachable: true, recentFailures: 0 });
    expect(resource.external).toMatchObject({ namespace, name: objectName(resource.id) });
  });

  it('re-renders a changed backend set and rolls the Deployment onto it without fewer available Pods', async () => {
    const resource = await managed(spec());
    await reconcileUntil(resource, readyAndCurrent);
    await eventually(async () => rolledOut((await objectsOf(resource)).deployment, 2), 60_000, 100);
    const before = (await objectsOf(resource)).deployment!;
    const oldHash = before.spec!.template.metadata!.annotations![CONFIG_HASH_ANNOTATION];

    // One backend attached, one detached and draining.
    const [kept, detached] = resource.desired.backends;
    const attached = backend('10.244.2.20', 9090);
    resource.desired = {
      ...resource.desired,
      backends: [kept, { ...detached, draining: true, drain_until: new Date(Date.now() + 60_000).toISOString() }, attached],
    };
    resource.generation += 1;
    const stale = await driver.observe(resource);
    expect(stale).toMatchObject({ exists: true, upToDate: false });

    // Every pass of the rollout keeps both old Pods' worth available (maxUnavailable 0).
    const availableSeen: number[] = [];
    await reconcileUntil(resource, (o) => o.exists && o.upToDate);
    await eventually(
      async () => {
        const { deployment } = await objectsOf(resource);
        availableSeen.push(deployment?.status?.availableReplicas ?? 0);
        return rolledOut(deployment, 2) && deployment!.spec!.template.metadata!.annotations![CONFIG_HASH_ANNOTATION] !== oldHash;
      },
      60_000,
      50,
    );
    expect(Math.min(...availableSeen)).toBeGreaterThanOrEqual(2);

    expect(serverLines(await configOf(resource))).toEqual(
      [
        `server ${kept.server_id}-8080 10.244.1.10:8080 check`,
        `server ${detached.server_id}-8080 10.244.1.11:8080 check weight 0`,
        `server ${attached.server_id}-9090 10.244.2.20:9090 check`,
      ].sort(),
    );
    // The Pods that run now are of the new configuration only.
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${resource.id}` });
    const live = pods.items.filter((p) => !p.metadata?.deletionTimestamp);
    const newHash = (await objectsOf(resource)).deployment!.spec!.template.metadata!.annotations![CONFIG_HASH_ANNOTATION];
    expect(live.map((p) => p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION])).toEqual([newHash, newHash]);
    const final = await reconcileUntil(resource, readyAndCurrent);
    expect(final.exists && final.observed.map((b) => b.server_id).sort()).toEqual([kept, detached, attached].map((b) => b.server_id).sort());
  });

  it('repairs drift: a Deployment deleted by hand comes back, a ConfigMap edited by hand is put back', async () => {
    const resource = await managed(spec());
    await reconcileUntil(resource, readyAndCurrent);
    const name = objectName(resource.id);
    const original = await configOf(resource);

    await apps.deleteNamespacedDeployment({ name, namespace });
    await eventually(async () => (await objectsOf(resource)).deployment === null, 30_000, 100);
    expect(await driver.observe(resource)).toMatchObject({ exists: true, upToDate: false, ready: false });
    await reconcileUntil(resource, readyAndCurrent);
    expect((await objectsOf(resource)).deployment?.metadata?.ownerReferences?.[0]?.uid).toBe(resource.owner!.uid);

    await core.patchNamespacedConfigMap({ name, namespace, body: [{ op: 'replace', path: `/data/${CONFIG_KEY}`, value: 'global\n' }] });
    expect(await configOf(resource)).toBe('global\n');
    expect(await driver.observe(resource)).toMatchObject({ exists: true, upToDate: false });
    await reconcileUntil(resource, readyAndCurrent);
    expect(await configOf(resource)).toBe(original);
  });

  it('terminates TLS with the certificate of the Secret ssl_certificate_id names, once that Secret exists', async () => {
    const resource = await managed(spec({ protocol: 'https', port: 443, ssl_certificate_id: 'web-tls', sticky_sessions: true }));
    // No Secret yet: nothing of the Deployment is made, and observe says why.
    const waiting = await reconcileUntil(resource, (o) => o.exists && o.rejected !== null && o.rejected !== undefined);
    expect(waiting).toMatchObject({
      exists: true,
      ready: false,
      upToDate: false,
      rejected: `the certificate Secret 'web-tls' does not exist in namespace ${namespace}`,
    });
    expect((await objectsOf(resource)).deployment).toBeNull();

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-lb-tls-'));
    try {
      const { certificateFile, certificatePem } = await makeTestCertificate(dir);
      const key = fs.readFileSync(`${certificateFile}.key`);
      const secret = await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: 'web-tls' },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': Buffer.from(certificatePem).toString('base64'), 'tls.key': key.toString('base64') },
        },
      });
      const observed = await reconcileUntil(resource, readyAndCurrent);
      expect(observed).toMatchObject({ rejected: null });
      const { deployment, service } = await objectsOf(resource);
      const pod = deployment!.spec!.template;
      expect(pod.metadata!.annotations![CERTIFICATE_VERSION_ANNOTATION]).toBe(secret.metadata!.resourceVersion);
      expect(pod.spec!.volumes).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            name: 'tls',
            secret: expect.objectContaining({
              secretName: 'web-tls',
              items: [
                { key: 'tls.crt', path: 'tls.pem' },
                { key: 'tls.key', path: 'tls.pem.key' },
              ],
            }),
          }),
        ]),
      );
      expect(await configOf(resource)).toContain('bind *:8080 ssl crt "/etc/haproxy/tls/tls.pem" alpn h2,http/1.1');
      expect(service!.spec!.ports).toEqual([expect.objectContaining({ port: 443, targetPort: 'frontend' })]);

      // A renewed certificate is a new Secret version: the Pods are rolled onto it.
      await core.replaceNamespacedSecret({ name: 'web-tls', namespace, body: { ...secret, metadata: { ...secret.metadata, labels: { renewed: 'yes' } } } });
      expect(await driver.observe(resource)).toMatchObject({ exists: true, upToDate: false });
      await reconcileUntil(resource, readyAndCurrent);
      const renewed = (await core.readNamespacedSecret({ name: 'web-tls', namespace })).metadata!.resourceVersion;
      expect((await objectsOf(resource)).deployment!.spec!.template.metadata!.annotations![CERTIFICATE_VERSION_ANNOTATION]).toBe(renewed);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails a new load balancer whose HAProxy cannot roll out, and keeps a running one serving when its update cannot', async () => {
    const unpullable = (progressDeadlineSeconds: number) =>
      new HaproxyLoadBalancerDriver({
        kubeConfig: operatorKubeConfig,
        systemNamespace: SYSTEM_NAMESPACE,
        logger: pino({ level: 'silent' }),
        // KWOK fails every pull from this registry, as a kubelet would.
        haproxy: { replicas: 2, image: `${UNREACHABLE_REGISTRY}/haproxy:2.6`, progressDeadlineSeconds },
        statsTimeoutMs: 300,
        progressPollMs: 100,
      });

    // New: its Pods never become ready, and once the Deployment's progress deadline passes, the load balancer fails.
    const fresh = await managed(spec());
    const failing = unpullable(3);
    fresh.external = (await failing.create(fresh)).external;
    const failed = await eventually(
      async () => {
        const o = await failing.observe(fresh);
        return o.exists && o.failure ? o : null;
      },
      60_000,
      200,
    );
    expect(failed).toMatchObject({ ready: false, failure: expect.stringMatching(/^the HAProxy Deployment did not roll out: ProgressDeadlineExceeded/) });

    // Running: the update's new Pods cannot start, the old ones keep serving (maxUnavailable 0), and observe says why.
    const running = await managed(spec());
    await reconcileUntil(running, readyAndCurrent);
    await eventually(async () => rolledOut((await objectsOf(running)).deployment, 2), 60_000, 100);
    const stuck = unpullable(3);
    await stuck.update(running);
    const rejected = await eventually(
      async () => {
        const o = await stuck.observe(running);
        return o.exists && o.rejected ? o : null;
      },
      60_000,
      200,
    );
    expect(rejected).toMatchObject({
      ready: true,
      failure: null,
      rejected: expect.stringMatching(/^the HAProxy Deployment did not roll out: ProgressDeadlineExceeded/),
    });
    expect((await objectsOf(running)).deployment!.status!.availableReplicas).toBe(2);
  });

  it('never touches an object of the same name that it did not make: the load balancer fails, naming it', async () => {
    const resource = await managed(spec());
    const name = objectName(resource.id);
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { 'haproxy.cfg': 'mine' } } });
    const created = await driver.create(resource);
    expect(created.external).toEqual({ namespace, name });
    const observed = await driver.observe(resource);
    expect(observed).toMatchObject({
      exists: true,
      ready: false,
      failure: `a ConfigMap ${namespace}/${name} that Cloudplane did not make for this load balancer is in the way`,
    });
    await driver.delete(resource);
    const { configMap, deployment, service } = await objectsOf(resource);
    expect({ data: configMap?.data, labels: configMap?.metadata?.labels, deployment, service }).toEqual({
      data: { 'haproxy.cfg': 'mine' },
      labels: undefined,
      deployment: null,
      service: null,
    });
    await core.deleteNamespacedConfigMap({ name, namespace });
  });

  it('delete removes all three objects, and observe then reports absent', async () => {
    const resource = await managed(spec());
    await reconcileUntil(resource, readyAndCurrent);
    await eventually(
      async () => {
        await driver.delete(resource);
        return !(await driver.observe(resource)).exists;
      },
      30_000,
      100,
    );
    expect(await objectsOf(resource)).toEqual({ configMap: null, deployment: null, service: null });
    // The Pods follow their ReplicaSets (the garbage collector).
    await eventually(
      async () => (await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${resource.id}` })).items.length === 0,
      60_000,
      200,
    );
  });

  it('owner references cascade: deleting the custom resource removes what the driver made', async () => {
    const resource = await managed(spec());
    await reconcileUntil(resource, readyAndCurrent);
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'loadbalancers',
      name: resource.owner!.name,
      propagationPolicy: 'Background',
    });
    await eventually(
      async () => {
        const objects = await objectsOf(resource);
        return objects.configMap === null && objects.deployment === null && objects.service === null;
      },
      60_000,
      200,
    );
    expect(await driver.observe(resource)).toEqual({ exists: false });
  });

  it('reads the traffic of real requests through HAProxy in each serving Pod, summed, and refuses a sum that would leave a Pod out', async () => {
    const counted = new HaproxyLoadBalancerDriver({
      kubeConfig: operatorKubeConfig,
      systemNamespace: SYSTEM_NAMESPACE,
      logger: pino({ level: 'silent' }),
      // Checks often, so the backend is seen up a short while after HAProxy starts.
      haproxy: { replicas: 2, checkIntervalMs: 200 },
      statsTimeoutMs: 1_000,
      progressPollMs: 100,
    });
    // The backend runs beside HAProxy on each played Pod's loopback.
    const target: DesiredBackend = { server_id: newId('svr'), port: 9000, address: '127.0.0.1', draining: false, drain_until: null };
    const resource = await managed(desiredLoadBalancer({ backends: [target] }));
    await eventually(
      async () => {
        const observed = await counted.observe(resource);
        if (!observed.exists) resource.external = (await counted.create(resource)).external;
        else if (!observed.upToDate) resource.external = (await counted.update(resource)).external;
        return readyAndCurrent(observed) && rolledOut((await objectsOf(resource)).deployment, 2);
      },
      60_000,
      100,
    );
    // KWOK's Pods run nothing: their stats never answer, and no sum is made up without them.
    await expect(counted.traffic(resource)).rejects.toThrow(
      new DataPlaneUnavailable('2 of its 2 serving HAProxy Pods did not give their stats within 1000 ms'),
    );

    const pods = (await core.listNamespacedPod({ namespace, labelSelector: `cloudplane.dev/id=${resource.id}` })).items.filter(isServing);
    expect(pods).toHaveLength(2);
    const config = await configOf(resource);
    const netns = netnsSet();
    const processes: ChildProcess[] = [];
    const outputs: string[] = [];
    const dirs: string[] = [];
    const stop = async (child: ChildProcess) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    };
    try {
      // The kubelet's part for each Pod: the Pod's IP in a namespace of its own, reached from the
      // test's namespace (as the operator reaches Pod IPs), HAProxy on the ConfigMap's file, and the backend.
      for (const [i, pod] of pods.entries()) {
        const podIp = pod.status!.podIP!;
        const near = `192.0.2.${10 + i}`;
        const ns = netns.make(`lb${i}`);
        netns.link(null, `${near}/32`, ns, `${podIp}/32`);
        const hostEnd = (await run('ip', ['-o', '-4', 'addr', 'show', 'to', `${near}/32`])).output.trim().split(/\s+/)[1];
        await run('ip', ['route', 'add', `${podIp}/32`, 'dev', hostEnd, 'src', near]);
        const podEnd = (await ns.exec('ip', ['-o', '-4', 'addr', 'show', 'to', `${podIp}/32`])).trim().split(/\s+/)[1];
        await ns.exec('ip', ['route', 'add', `${near}/32`, 'dev', podEnd]);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-lb-pod-'));
        dirs.push(dir);
        fs.writeFileSync(path.join(dir, 'haproxy.cfg'), config);
        const backend = ns.spawn(
          process.execPath,
          ['-e', `require('node:http').createServer((req, res) => res.end(req.url === '/health' ? '' : 'served by pod ${i}')).listen(9000, '127.0.0.1')`],
          { stdio: 'ignore' },
        );
        const haproxy = ns.spawn(haproxyBinary(), ['-W', '-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
        outputs[i] = '';
        haproxy.stdout!.on('data', (chunk: Buffer) => (outputs[i] += chunk.toString()));
        haproxy.stderr!.on('data', (chunk: Buffer) => (outputs[i] += chunk.toString()));
        processes.push(backend, haproxy);
      }
      // Both Pods answer and see the backend up (HAProxy's own checks).
      await eventually(
        async () => {
          const traffic = await counted.traffic(resource).catch(() => null);
          return traffic?.backends[0]?.up ? traffic : null;
        },
        30_000,
        100,
      ).catch((err) => {
        throw new Error(`${err.message}\nHAProxy said:\n${outputs.join('\n---\n')}`);
      });
      const before = await counted.traffic(resource);

      const perPod = 5;
      const get = (ip: string) =>
        new Promise<string>((resolve, reject) => {
          http
            .get({ host: ip, port: FRONTEND_CONTAINER_PORT, path: '/', agent: false }, (res) => {
              let body = '';
              res.on('data', (chunk: Buffer) => (body += chunk.toString()));
              res.on('end', () => resolve(`${res.statusCode} ${body}`));
            })
            .on('error', reject);
        });
      for (const [i, pod] of pods.entries()) {
        for (let n = 0; n < perPod; n += 1) expect(await get(pod.status!.podIP!)).toBe(`200 served by pod ${i}`);
      }

      const after = await counted.traffic(resource);
      expect(after).toMatchObject({ instances: 2, current_sessions: 0, observed_at: expect.any(String) });
      // Summed over both Pods: every request was a session of its own, with bytes each way.
      expect(after.sessions_total - before.sessions_total).toBeGreaterThanOrEqual(2 * perPod);
      expect(after.bytes_in - before.bytes_in).toBeGreaterThan(0);
      expect(after.bytes_out - before.bytes_out).toBeGreaterThan(0);
      const [backendBefore] = before.backends;
      const [backendAfter] = after.backends;
      expect(backendAfter).toMatchObject({ server_id: target.server_id, port: target.port, up: true });
      expect(backendAfter.sessions_total - backendBefore.sessions_total).toBeGreaterThanOrEqual(2 * perPod);
      expect(backendAfter.bytes_in - backendBefore.bytes_in).toBeGreaterThan(0);
      expect(backendAfter.bytes_out - backendBefore.bytes_out).toBeGreaterThan(0);
      // The counters are the Pods' own, cumulative: what one Pod served alone is under the sum.
      const onePod = await fetch(`http://${pods[0].status!.podIP!}:8404/stats;csv`).then((res) => res.text());
      const publicRow = onePod.split('\n').find((line) => line.startsWith('public,FRONTEND,'))!;
      const header = onePod.split('\n')[0].slice(2).split(',');
      const oneSessions = Number(publicRow.split(',')[header.indexOf('stot')]);
      expect(oneSessions).toBeGreaterThanOrEqual(perPod);
      expect(oneSessions).toBeLessThan(after.sessions_total);

      // One Pod's HAProxy stops answering while the Pod still counts as serving: no sum without it.
      await stop(processes[3]);
      await expect(counted.traffic(resource)).rejects.toThrow(
        new DataPlaneUnavailable('1 of its 2 serving HAProxy Pods did not give their stats within 1000 ms'),
      );
    } finally {
      for (const child of processes) await stop(child);
      netns.destroy();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts an API server that does not answer into its health', async () => {
    // The cluster's credentials, at an address where nothing listens.
    const nowhere = new KubeConfig();
    nowhere.loadFromString(cluster.kubeconfigYaml.replace(cluster.url, 'https://127.0.0.1:1'));
    const unreachable = new HaproxyLoadBalancerDriver({
      kubeConfig: nowhere,
      systemNamespace: SYSTEM_NAMESPACE,
      logger: pino({ level: 'silent' }),
      requestTimeoutMs: 2_000,
    });
    const resource = await managed(spec());
    await expect(unreachable.observe(resource)).rejects.toThrow();
    expect(unreachable.health()).toMatchObject({ state: 'unavailable', reachable: false, recentFailures: 3 });
  });
});

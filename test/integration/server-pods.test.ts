/**
 * The `kubernetes` server driver (src/drivers/kubernetes/server-pods.ts) against the
 * workload cluster: real kube-apiserver, kube-controller-manager (the garbage collector
 * among them) and kube-scheduler, with KWOK playing the kubelets of two fake nodes. The
 * test drives the driver as the reconciler does: observe first on every pass, then create,
 * update or delete as the observation says, carrying the record each step returns into
 * the next call. Each server is owned by a real Server custom resource.
 *
 * KWOK plays the kubelet in two places: a scheduled Pod becomes Running and Ready with an
 * IP (its default stages), and an image from registry.invalid fails to pull with
 * ErrImagePull / ImagePullBackOff (stages added by workload-cluster.ts).
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { PodServerDriver, PodServerDriverOptions, SERVER_CONTAINER } from '../../src/drivers/kubernetes/server-pods';
import { DEFAULT_PLAN_RESOURCES, DEFAULT_SERVER_IMAGES } from '../../src/lib/server-catalog';
import type { ServerDesired, ServerObserved, ServerOutputs } from '../../src/drivers/server';
import { ExternalRecord, Managed, Observation, OwnerRefusal } from '../../src/drivers/types';
import { eventually } from '../helpers/service';
import { POD_CIDR, startWorkloadCluster, UNREACHABLE_REGISTRY, WorkloadCluster } from '../helpers/workload-cluster';

const SYSTEM_NAMESPACE = 'cloudplane-system';
const TEAM_SUFFIX = randomBytes(8).toString('hex');
const TEAM = `team_${TEAM_SUFFIX}`;
const NAMESPACE = `team-${TEAM_SUFFIX}`;
/** Nodes smaller than the biggest plan (s-8vcpu-16gb asks for 8 CPUs and 16 GiB). */
const NODE = { cpu: '4', memory: '8Gi', pods: '110' };
const UNPULLABLE = 'broken-1.0';
const CATALOG = { ...DEFAULT_SERVER_IMAGES, [UNPULLABLE]: { image: `${UNREACHABLE_REGISTRY}/cloudplane/broken:1.0`, command: ['sleep', 'infinity'] } };

type Obs = Observation<ServerOutputs, ServerObserved>;

describe('server driver: servers as Pods', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let driver: PodServerDriver;

  const newDriver = (options: Partial<PodServerDriverOptions> = {}) =>
    new PodServerDriver({
      kubeConfig: cluster.kubeConfig,
      systemNamespace: SYSTEM_NAMESPACE,
      logger: pino({ level: 'silent' }),
      catalog: CATALOG,
      pollMs: 200,
      ...options,
    });

  /** A server as the reconciler hands it to the driver, owned by a real Server custom resource. */
  async function newServer(desired: Partial<ServerDesired> = {}): Promise<Managed<ServerDesired>> {
    const id = `svr_${randomBytes(8).toString('hex')}`;
    const { mounts = [], ...fields } = desired;
    const spec = {
      name: id.replace('_', '-'),
      region: 'fra1',
      plan: 's-1vcpu-1gb',
      image: 'ubuntu-24.04',
      power_state: 'on' as const,
      reboot_requests: 0,
      ...fields,
    };
    const cr = (await custom.createNamespacedCustomObject({
      group: 'cloudplane.dev',
      version: 'v1alpha1',
      plural: 'servers',
      namespace: NAMESPACE,
      body: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'Server', metadata: { name: id.replace('_', '-'), labels: { 'cloudplane.dev/id': id } }, spec },
    })) as { metadata: { name: string; uid: string } };
    return {
      id,
      team: TEAM,
      generation: 1,
      desired: { ...spec, mounts },
      external: null,
      owner: { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'Server', name: cr.metadata.name, uid: cr.metadata.uid },
    };
  }

  /**
   * One pass of the reconciler: observe, then the step the observation calls for, its record
   * kept for the next call. Returns the observation the pass started from.
   */
  async function pass(server: Managed<ServerDesired>, d = driver, deleting = false): Promise<Obs> {
    const seen = await d.observe(server);
    let external: ExternalRecord | undefined;
    if (deleting) {
      if (seen.exists) external = (await d.delete(server)).external;
    } else if (!seen.exists) external = (await d.create(server)).external;
    else if (!seen.upToDate) external = (await d.update(server)).external;
    if (external) server.external = external;
    return seen;
  }

  /** Passes until an observation satisfies `done`; returns it. */
  async function converge(
    server: Managed<ServerDesired>,
    done: (o: Obs) => boolean,
    options: { d?: PodServerDriver; deleting?: boolean; timeoutMs?: number } = {},
  ): Promise<Obs> {
    let last: Obs | undefined;
    return eventually(
      async () => {
        last = await pass(server, options.d, options.deleting);
        return done(last) ? last : null;
      },
      options.timeoutMs ?? 60_000,
      100,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}; last observation: ${JSON.stringify(last)}; record: ${JSON.stringify(server.external)}`);
    });
  }

  const running = (o: Obs) => o.exists && o.ready && o.upToDate && o.observed.power === 'on';
  const readPod = (server: Managed<ServerDesired>) => core.readNamespacedPod({ name: server.id.replace('_', '-'), namespace: NAMESPACE });
  const podGone = async (server: Managed<ServerDesired>) =>
    readPod(server).then(
      () => false,
      (err) => (err as { code?: number }).code === 404,
    );
  const isReady = (pod: V1Pod) => pod.status?.phase === 'Running' && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

  beforeAll(async () => {
    cluster = await startWorkloadCluster({ nodes: 2, allocatable: NODE, crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    // Pods are admitted once the namespace's default ServiceAccount exists (kube-controller-manager makes it).
    await eventually(() => core.readNamespacedServiceAccount({ name: 'default', namespace: NAMESPACE }), 30_000, 200);
    driver = newDriver();
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  test("create makes a Pod in the team namespace, owned by the custom resource and labelled; it turns running with the Pod's IP", async () => {
    const server = await newServer();
    expect(await driver.observe(server)).toEqual({ exists: false });

    const ready = await converge(server, running);
    const pod = await readPod(server);
    expect(isReady(pod)).toBe(true);
    expect(ready.exists && ready.outputs).toEqual({ ipv4: pod.status!.podIP });
    // From the cluster's Pod CIDR (a /16: its first two octets).
    expect(pod.status!.podIP!.split('.').slice(0, 2).join('.')).toBe(POD_CIDR.split('.').slice(0, 2).join('.'));
    expect(ready.exists && ready.observed).toEqual({ power: 'on', reboots_done: 0 });

    expect(pod.metadata?.namespace).toBe(NAMESPACE);
    expect(pod.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': server.id });
    expect(pod.metadata?.ownerReferences).toEqual([
      { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'Server', name: server.owner!.name, uid: server.owner!.uid, controller: true, blockOwnerDeletion: true },
    ]);
    const container = pod.spec!.containers[0];
    expect(container.name).toBe(SERVER_CONTAINER);
    expect(container.image).toBe(DEFAULT_SERVER_IMAGES['ubuntu-24.04'].image);
    expect(container.resources).toEqual(DEFAULT_PLAN_RESOURCES['s-1vcpu-1gb']);
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    // Nothing of it outside the team's namespace.
    const elsewhere = await core.listPodForAllNamespaces({ labelSelector: `cloudplane.dev/id=${server.id}` });
    expect(elsewhere.items.map((p) => p.metadata?.namespace)).toEqual([NAMESPACE]);
    expect(driver.health()).toMatchObject({ state: 'connected', reachable: true, recentFailures: 0 });
  });

  test('stop deletes the Pod and keeps the record (power off); start brings a new Pod back, running', async () => {
    const server = await newServer();
    await converge(server, running);
    const first = await readPod(server);

    server.desired = { ...server.desired, power_state: 'off' };
    const stopped = await converge(server, (o) => o.exists && o.upToDate && o.observed.power === 'off');
    expect(await podGone(server)).toBe(true);
    expect(stopped.exists && !stopped.ready && stopped.outputs).toEqual({ ipv4: null });
    expect(server.external).not.toBeNull();
    // Stopped stays stopped: more passes change nothing.
    expect(await pass(server)).toMatchObject({ exists: true, upToDate: true, observed: { power: 'off' } });
    expect(await podGone(server)).toBe(true);

    server.desired = { ...server.desired, power_state: 'on' };
    const started = await converge(server, running);
    const second = await readPod(server);
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(started.exists && started.outputs).toEqual({ ipv4: second.status!.podIP });
  });

  test('a reboot replaces the Pod (a new uid) and counts as done once the new Pod is Ready', async () => {
    const server = await newServer();
    await converge(server, running);
    const before = await readPod(server);

    server.desired = { ...server.desired, reboot_requests: 1 };
    const rebooting = await pass(server);
    expect(rebooting).toMatchObject({ exists: true, upToDate: false, observed: { power: 'rebooting', reboots_done: 0 } });
    const done = await converge(server, (o) => running(o) && o.exists && o.observed.reboots_done === 1);
    const after = await readPod(server);
    expect(after.metadata!.uid).not.toBe(before.metadata!.uid);
    expect(isReady(after)).toBe(true);
    expect(done.exists && done.outputs).toEqual({ ipv4: after.status!.podIP });
    // Settled: no further reboot, the Pod stays.
    expect(await pass(server)).toMatchObject({ exists: true, upToDate: true, observed: { power: 'on', reboots_done: 1 } });
    expect((await readPod(server)).metadata!.uid).toBe(after.metadata!.uid);
  });

  test('a Pod deleted by hand while the server should run is drift: observe says not up to date, update creates it again', async () => {
    const server = await newServer();
    await converge(server, running);
    const original = await readPod(server);

    await core.deleteNamespacedPod({ name: original.metadata!.name!, namespace: NAMESPACE });
    await eventually(() => podGone(server), 30_000, 100);
    const drift = await driver.observe(server);
    expect(drift).toMatchObject({ exists: true, upToDate: false, ready: false, observed: { power: 'starting' } });

    await converge(server, running);
    const recreated = await readPod(server);
    expect(recreated.metadata!.uid).not.toBe(original.metadata!.uid);
    expect(recreated.metadata?.ownerReferences?.[0].uid).toBe(server.owner!.uid);
  });

  test('a plan no node can take fails the server once the start timeout has passed, saying why', async () => {
    const server = await newServer({ plan: 's-8vcpu-16gb' });
    const quick = newDriver({ startTimeoutMs: 2_000 });
    const patient = newDriver({ startTimeoutMs: 600_000 });

    await pass(server, quick);
    const pod = await eventually(
      async () => {
        const p = await readPod(server);
        return p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable') ? p : null;
      },
      30_000,
      100,
    );
    expect(pod.spec?.nodeName).toBeUndefined();
    // Within its timeout, an unschedulable Pod is only a server still starting.
    expect(await patient.observe(server)).toMatchObject({ exists: true, ready: false, failure: null, observed: { power: 'starting' } });

    const failed = await converge(server, (o) => o.exists && o.failure !== null, { d: quick, timeoutMs: 30_000 });
    expect(failed.exists && failed.failure).toMatch(/no node could take its Pod within 2 s: .*Insufficient cpu/);
  });

  test('an image that cannot be pulled fails the server once the start timeout has passed, saying why', async () => {
    const server = await newServer({ image: UNPULLABLE });
    const quick = newDriver({ startTimeoutMs: 2_000 });
    const patient = newDriver({ startTimeoutMs: 600_000 });

    await pass(server, quick);
    await eventually(
      async () => {
        const waiting = (await readPod(server)).status?.containerStatuses?.[0]?.state?.waiting?.reason;
        return waiting === 'ErrImagePull' || waiting === 'ImagePullBackOff';
      },
      30_000,
      100,
    );
    expect(await patient.observe(server)).toMatchObject({ exists: true, ready: false, failure: null });

    const failed = await converge(server, (o) => o.exists && o.failure !== null, { d: quick, timeoutMs: 30_000 });
    expect(failed.exists && failed.failure).toContain(`the image ${CATALOG[UNPULLABLE].image} could not be pulled within 2 s`);
    expect(failed.exists && failed.failure).toMatch(/ErrImagePull|ImagePullBackOff/);
  });

  test('an image the catalog lacks fails the server without making anything', async () => {
    const server = await newServer({ image: 'plan9-4' });
    const failed = await converge(server, (o) => o.exists && o.failure !== null);
    expect(failed.exists && failed.failure).toMatch(/the image 'plan9-4' is not in the server image catalog/);
    expect(await podGone(server)).toBe(true);
  });

  test('a Pod of the same name that Cloudplane did not make is reported and left alone', async () => {
    const server = await newServer();
    const name = server.id.replace('_', '-');
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: { metadata: { name }, spec: { containers: [{ name: 'other', image: 'registry.example/other:1' }] } },
    });
    // Running with an address of its own, which is not the server's.
    await eventually(async () => (await readPod(server)).status?.podIP, 30_000, 100);
    const seen = await converge(server, (o) => o.exists && o.failure !== null);
    expect(seen.exists && seen.failure).toMatch(/did not make/);
    expect(seen.exists && seen.outputs).toEqual({ ipv4: null });
    await driver.update(server);
    await driver.delete(server);
    const pod = await readPod(server);
    expect(pod.metadata?.deletionTimestamp).toBeUndefined();
    expect(pod.spec?.containers[0].name).toBe('other');
  });

  test('delete removes the Pod and observe reports absent once it is gone', async () => {
    const server = await newServer();
    await converge(server, running);
    await converge(server, (o) => !o.exists, { deleting: true });
    expect(await podGone(server)).toBe(true);
    expect(await driver.observe(server)).toEqual({ exists: false });
  });

  test('deleting the custom resource cascades to its Pod (the garbage collector follows the owner reference)', async () => {
    const server = await newServer();
    await converge(server, running);
    await custom.deleteNamespacedCustomObject({
      group: 'cloudplane.dev',
      version: 'v1alpha1',
      plural: 'servers',
      namespace: NAMESPACE,
      name: server.owner!.name,
    });
    await eventually(() => podGone(server), 60_000, 200);
  });

  test("the team namespace's own ResourceQuota refusing the Pod is the server's failure, not the provider's", async () => {
    const d = newDriver();
    const server = await newServer();
    const quota = { metadata: { name: 'no-pods' }, spec: { hard: { pods: '0' } } };
    await core.createNamespacedResourceQuota({ namespace: NAMESPACE, body: quota });
    try {
      // Admission counts against the quota once the quota controller has written its status.
      await eventually(async () => (await core.readNamespacedResourceQuota({ name: 'no-pods', namespace: NAMESPACE })).status?.hard?.pods === '0', 30_000, 200);
      const refused = await d.create(server).then(
        () => null,
        (err: Error) => err,
      );
      expect(refused).toBeInstanceOf(OwnerRefusal);
      expect(refused!.message).toMatch(/exceeded quota: no-pods/);
      expect(d.health()).toEqual({ state: 'connected', reachable: true, recentFailures: 0, lastFailure: null });
    } finally {
      await core.deleteNamespacedResourceQuota({ name: 'no-pods', namespace: NAMESPACE });
    }
    await converge(server, running, { d });
  });

  test('health: connected while the API server answers; unavailable, saying why, when it does not', async () => {
    const d = newDriver();
    const server = await newServer();
    await d.observe(server);
    expect(d.health()).toEqual({ state: 'connected', reachable: true, recentFailures: 0, lastFailure: null });

    await cluster.stopApiServer();
    try {
      await expect(d.observe(server)).rejects.toThrow(/reading Pod/);
      expect(d.health()).toMatchObject({ state: 'unavailable', reachable: false, recentFailures: 1 });
      expect(d.health().lastFailure).toMatch(/reading Pod/);
    } finally {
      await cluster.startApiServer();
    }
    await eventually(
      async () =>
        (await d.observe(server).then(
          () => true,
          () => false,
        )) && d.health().reachable,
      30_000,
      200,
    );
    // The failure stays counted for the health window; the API server answers again.
    expect(d.health()).toMatchObject({ state: 'degraded', reachable: true });
    expect(d.health().recentFailures).toBeGreaterThanOrEqual(1);
  });
});

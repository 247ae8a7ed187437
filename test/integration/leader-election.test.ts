/**
 * Leader election in cluster mode, end to end: operator processes against a real
 * kube-apiserver share one coordination.k8s.io Lease. Every replica serves the API, the
 * Lease holder alone reconciles, a SIGKILLed leader is replaced once its Lease runs out,
 * a gracefully stopped leader gives the Lease up at once, and a leader that cannot renew
 * steps down before its Lease runs out. The replicas run as the chart's ServiceAccount,
 * under exactly its RBAC: the Lease granted by a Role in the system namespace alone.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, kubeConfigOf } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, tempDataDir } from '../helpers/service';
import { expectOnlyListedCalls, operatorKubeconfigFromChart, teamNamespaceBindingEnv } from '../helpers/chart';

jest.setTimeout(120_000);

const KEY = 'cpk_LeaderElection0123456789abcdefghijABCDEF';
const NAMESPACE = 'cloudplane-system';
const LEASE = 'cloudplane-operator';
const LEASE_SECONDS = 3;

let server: KubeApiServer;
let operatorKubeconfig: string;
let leases: CoordinationV1Api;
const children: ChildService[] = [];
const proxies: Array<{ close(): Promise<void> }> = [];

/**
 * A TCP proxy in front of the API server: a replica configured through it can be cut off
 * (every connection dropped, new ones refused) while the others still reach the server.
 */
async function startProxy(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const proxy = net.createServer((client) => {
    if (cut) return client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as net.AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    // close() alone waits for every open connection to end, and a replica's watch through
    // the proxy never ends by itself: the afterAll hook hung on it for its whole timeout.
    close() {
      cut = true;
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => proxy.close(() => resolve()));
    },
  };
}

async function startReplica(name: string, kubeconfigPath = operatorKubeconfig): Promise<ChildService> {
  const child = await startChildService({
    dataDir: tempDataDir(),
    key: KEY,
    env: {
      CLOUDPLANE_STORE: 'kubernetes',
      CLOUDPLANE_KUBECONFIG: kubeconfigPath,
      ...teamNamespaceBindingEnv(),
      CLOUDPLANE_SYSTEM_NAMESPACE: NAMESPACE,
      CLOUDPLANE_LEASE_DURATION_SECONDS: String(LEASE_SECONDS),
      CLOUDPLANE_PROVIDER: 'simulated',
      CLOUDPLANE_SIM_DELAY_MS: '50',
      CLOUDPLANE_RESYNC_SECONDS: '5',
      POD_NAME: name,
    },
  });
  children.push(child);
  return child;
}

const readLease = (): Promise<V1Lease> => leases.readNamespacedLease({ name: LEASE, namespace: NAMESPACE });

/**
 * Waits for cloudplane_leader to read 1: the elector sets it when its Lease write is
 * answered, which the test's own read of the Lease can overtake on a loaded machine.
 */
async function leadsPerGauge(replica: ChildService): Promise<void> {
  await eventually(async () => (await leaderGauge(replica)) === 1, 10_000, 50);
}

async function leaderGauge(replica: ChildService): Promise<number> {
  const text = (await replica.api('GET', '/metrics')).body as string;
  const line = text.split('\n').find((l) => l.startsWith('cloudplane_leader '));
  if (!line) throw new Error('cloudplane_leader is missing from /metrics');
  return Number(line.split(' ')[1]);
}

/** Reconcile passes this replica ran, from its /metrics. */
async function reconciles(replica: ChildService): Promise<number> {
  const text = (await replica.api('GET', '/metrics')).body as string;
  return text
    .split('\n')
    .filter((l) => l.startsWith('cloudplane_reconcile_total{'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

async function createServerAndWaitRunning(via: ChildService, name: string): Promise<void> {
  const created = await via.api('POST', '/api/v1/servers', { name, region: 'fra1' });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  await eventually(
    async () => {
      const res = await via.api('GET', `/api/v1/servers/${id}`);
      return res.status === 200 && res.body.data.status === 'running';
    },
    15_000,
    100,
  );
}

beforeAll(async () => {
  server = await startKubeApiServer();
  await installCrds(server);
  operatorKubeconfig = operatorKubeconfigFromChart(server, server.workDir);
  leases = kubeConfigOf(server).makeApiClient(CoordinationV1Api);
});

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await Promise.all(proxies.map((p) => p.close()));
  await server?.stop();
});

it('one replica leads; a killed leader is replaced within the lease, a stopped one hands over at once, a cut-off one steps down', async () => {
  // Started one after the other: the first creates the bootstrap team, the second finds it.
  const replicas = { 'replica-a': await startReplica('replica-a'), 'replica-b': await startReplica('replica-b') };

  // Both serve the API and are ready; exactly one holds the Lease.
  for (const replica of Object.values(replicas)) {
    expect((await replica.api('GET', '/api/v1/regions')).status).toBe(200);
    expect((await replica.api('GET', '/readyz')).status).toBe(200);
  }
  const first = await readLease();
  const leaderName = first.spec?.holderIdentity as keyof typeof replicas;
  expect(Object.keys(replicas)).toContain(leaderName);
  expect(first.spec?.leaseDurationSeconds).toBe(LEASE_SECONDS);
  const leader = replicas[leaderName];
  const standbyName = leaderName === 'replica-a' ? 'replica-b' : 'replica-a';
  const standby = replicas[standbyName];
  await leadsPerGauge(leader);
  expect(await leaderGauge(standby)).toBe(0);

  // The leader renews: renewTime moves on while the holder stays.
  const renewed = await eventually(
    async () => {
      const lease = await readLease();
      return String(lease.spec?.renewTime) !== String(first.spec?.renewTime) && lease;
    },
    LEASE_SECONDS * 1000 * 2,
    200,
  );
  expect(renewed.spec?.holderIdentity).toBe(leaderName);

  // Written through the replica that does not lead, reconciled by the one that does.
  await createServerAndWaitRunning(standby, 'via-standby');
  expect(await reconciles(leader)).toBeGreaterThan(0);
  expect(await reconciles(standby)).toBe(0);

  // SIGKILL: no release, so the standby waits out the Lease and then takes it.
  const killedAt = Date.now();
  await leader.kill();
  const takenOver = await eventually(
    async () => {
      const lease = await readLease();
      return lease.spec?.holderIdentity === standbyName && lease;
    },
    LEASE_SECONDS * 1000 * 4,
    100,
  );
  const takeoverMs = Date.now() - killedAt;
  console.log(`standby took the Lease ${takeoverMs} ms after the leader was killed (lease ${LEASE_SECONDS} s)`);
  expect(takenOver.spec?.leaseTransitions).toBe((first.spec?.leaseTransitions ?? 0) + 1);
  await leadsPerGauge(standby);
  await createServerAndWaitRunning(standby, 'after-failover');

  // replica-c reaches the API server through a proxy, to be cut off further down.
  const proxy = await startProxy(new URL(server.url));
  proxies.push(proxy);
  const proxiedKubeconfig = path.join(tempDataDir(), 'kubeconfig');
  fs.writeFileSync(proxiedKubeconfig, fs.readFileSync(operatorKubeconfig, 'utf8').replace(server.url, proxy.url), { mode: 0o600 });

  // A graceful stop clears the holder: with no standby left, the Lease is free...
  expect(await standby.stop()).toBe(0);
  const released = await readLease();
  expect(released.spec?.holderIdentity).toBeFalsy();

  // ...so a new replica takes it on its first try instead of waiting out the Lease.
  const startedAt = Date.now();
  const next = await startReplica('replica-c', proxiedKubeconfig);
  const acquired = await readLease();
  expect(acquired.spec?.holderIdentity).toBe('replica-c');
  console.log(`replica-c led ${Date.now() - startedAt} ms after it was started`);
  await leadsPerGauge(next);
  await createServerAndWaitRunning(next, 'after-handover');

  // Cut off from the API server, the leader stops its leading work before its Lease runs
  // out for the standby, so the two never reconcile at the same time.
  const standbyD = await startReplica('replica-d');
  expect(await leaderGauge(standbyD)).toBe(0);
  const cutAt = Date.now();
  proxy.cut();
  let steppedDownAt = 0;
  const takenAt = await eventually(
    async () => {
      if (!steppedDownAt && (await leaderGauge(next)) === 0) steppedDownAt = Date.now();
      return (await readLease()).spec?.holderIdentity === 'replica-d' && Date.now();
    },
    LEASE_SECONDS * 1000 * 4,
    50,
  );
  console.log(`cut off: replica-c stepped down after ${steppedDownAt - cutAt} ms, replica-d took the Lease after ${takenAt - cutAt} ms`);
  expect(steppedDownAt).toBeGreaterThan(0);
  expect(steppedDownAt).toBeLessThanOrEqual(takenAt);
  await leadsPerGauge(standbyD);
});

it("took, renewed and handed over the Lease with the chart's rights alone: every call listed, none refused", () => {
  const lease = expectOnlyListedCalls(server).filter((c) => c.group === 'coordination.k8s.io');
  expect(new Set(lease.map((c) => c.verb))).toEqual(new Set(['get', 'create', 'update']));
  expect(new Set(lease.map((c) => c.namespace))).toEqual(new Set([NAMESPACE]));
});

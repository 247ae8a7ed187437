/**
 * Databases on the cloudnative-pg driver, against the real CloudNativePG: its operator
 * (`manager controller` of the release scripts/build-cloudnative-pg.sh builds, its CRDs
 * installed) runs against the workload cluster (test/helpers/workload-cluster.ts: real
 * kube-apiserver, controller manager, scheduler; KWOK for the kubelets), and Cloudplane
 * runs under the chart's RBAC. Nothing here writes CloudNativePG's status: the operator
 * does, from what its instance manager reports.
 *
 * The test plays the kubelet of the Pods the operator makes, as database-cluster.test.ts
 * plays the StatefulSet's: for each, in a network namespace holding the Pod's IP (the
 * operator, on this machine's side of the link, reaches the instance manager there as it
 * would across a Pod network), with a private /controller (the image's init container
 * copies the manager there), /run and the claim's volume at /var/lib/postgresql/data, it
 * runs the Pod's own command with the Pod's environment as the `postgres` user, with
 * Debian's PostgreSQL programs on PATH:
 * - the initdb Job's Pod: `manager instance init`; then marks the Pod Succeeded through the
 *   API, as a kubelet would (KWOK's stage that would end it is off here);
 * - the instance's Pod: `manager instance run`, left running;
 * - with num_nodes 2, the join Job's Pod (`manager instance join`: a pg_basebackup of the
 *   primary through the `-rw` Service's name, which the Pod's hosts file gives, over a
 *   link between the two Pods' namespaces), then the standby's `manager instance run`.
 * The instance manager reaches the API server as a Pod does, at the kubernetes Service's
 * address (forwarded to kube-apiserver, which listens on loopback only), with the Pod's
 * service account token (requested for the Pod, as a kubelet projects it), so CloudNativePG's
 * own Role for the instance is what it may do.
 * Then: the database runs, a client connects with the API's details over TLS verified
 * against the Cluster's CA (at the Pod's IP: no kube-proxy routes the `-rw` Service's
 * ClusterIP here), users and logical databases made through the API work, trusted sources
 * shut others out, a reset password takes, a standby streams, and delete
 * removes the Cluster, which takes what CloudNativePG made with it.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { CoreV1Api, CustomObjectsApi, V1Container, V1Pod } from '@kubernetes/client-node';
import { findPostgres, PostgresInstall } from '../../src/drivers/local/postgres-install';
import { PG_VERSIONS } from '../../src/resources/database';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { builtTool, freePort, spawnLogged, stopChild } from '../helpers/kube-apiserver';
import { expectOnlyListedCalls, NAMESPACE as SYSTEM_NAMESPACE } from '../helpers/chart';
import { Netns, netnsSet, NetnsSet } from '../helpers/netns';

jest.setTimeout(600_000);

const STORAGE_CLASS = 'cnpg-test';
const OPERATOR_NAMESPACE = 'cnpg-system';
/** The kubernetes Service's ClusterIP (the first of the workload cluster's SERVICE_CIDR). */
const KUBERNETES_SERVICE_IP = '10.0.0.1';
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };

/** The other address of an IPv4 /31: the test's own end of a Pod's link. */
function pairedAddress(ip: string): string {
  const octets = ip.split('.').map(Number);
  octets[3] ^= 1;
  return octets.join('.');
}

describe('cluster mode: databases as CloudNativePG Clusters, run by the real operator', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let t: TestService;
  let namespace: string;
  let install: PostgresInstall;
  let manager: string;
  let work: string;
  let operator: ChildProcess | undefined;
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-cnpg-'));
    fs.chmodSync(work, 0o711);
    const found = findPostgres(null, work, PG_VERSIONS);
    if ('missing' in found) throw new Error(found.missing);
    install = found;
    manager = builtTool('CloudNativePG', 'build-cloudnative-pg.sh');
    cluster = await startWorkloadCluster({ crds: true, moreCrdsDir: path.join(path.dirname(manager), 'crds'), completeJobPods: false });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    operator = await startOperator();
    t = await startServiceUnderChartRbac(cluster, {
      CLOUDPLANE_DRIVER_DATABASE: 'cloudnative-pg',
      CLOUDPLANE_DATABASE_STORAGE_CLASS: STORAGE_CLASS,
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await t?.stop();
    if (operator) await stopChild(operator, 'SIGKILL');
    await cluster?.stop();
  });

  /**
   * The operator as its Deployment runs it, but on this machine: its own namespace, its
   * webhook server on a free port with a certificate of its own (no webhook configuration
   * is registered: the operator applies its defaults itself, saying so), metrics off.
   */
  async function startOperator(): Promise<ChildProcess> {
    await core.createNamespace({ body: { metadata: { name: OPERATOR_NAMESPACE } } });
    const certDir = path.join(work, 'webhook');
    fs.mkdirSync(certDir);
    execFileSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=cnpg-webhook-service',
      '-keyout',
      path.join(certDir, 'apiserver.key'),
      '-out',
      path.join(certDir, 'apiserver.crt'),
    ]);
    const log = path.join(work, 'operator.log');
    const webhookPort = await freePort();
    // Its image holds the manager as /operator/manager_<arch> too: it reads the architectures it can give instances from there (relative to its directory).
    const root = path.join(work, 'operator-root');
    fs.mkdirSync(path.join(root, 'operator'), { recursive: true });
    fs.symlinkSync(manager, path.join(root, 'operator', `manager_${process.arch === 'x64' ? 'amd64' : process.arch}`));
    const child = spawnLogged(
      'env',
      [
        '-C',
        root,
        `KUBECONFIG=${cluster.kubeconfigPath}`,
        `OPERATOR_NAMESPACE=${OPERATOR_NAMESPACE}`,
        `WEBHOOK_CERT_DIR=${certDir}`,
        'OPERATOR_IMAGE_NAME=ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0',
        manager,
        'controller',
        '--leader-elect=false',
        `--webhook-port=${webhookPort}`,
        '--metrics-bind-address=0',
      ],
      log,
    );
    cleanups.push(() => {
      if (process.env.CLOUDPLANE_TEST_KEEP_LOGS) fs.copyFileSync(log, path.join(process.env.CLOUDPLANE_TEST_KEEP_LOGS, 'cnpg-operator.log'));
    });
    await eventually(async () => (fs.readFileSync(log, 'utf8').includes('Starting workers') ? true : null), 60_000, 250).catch((err: Error) => {
      throw new Error(`CloudNativePG's operator did not start: ${err.message}\n${fs.readFileSync(log, 'utf8').slice(-3000)}`);
    });
    return child;
  }

  const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));
  const clusterOf = (name: string) => read(() => custom.getNamespacedCustomObject({ ...CNPG, namespace, plural: 'clusters', name }));
  const podWith = async (selector: string): Promise<V1Pod | null> => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: selector });
    return pods.items.find((p) => p.status?.podIP && !p.metadata?.deletionTimestamp && p.status.phase === 'Running') ?? null;
  };

  /** The claim's volume: a directory of this machine, the PersistentVolume's hostPath. */
  async function volumeFor(claim: string): Promise<string> {
    const dir = path.join(work, `pv-${claim}`);
    fs.mkdirSync(dir, { mode: 0o700 });
    if (install.runAs) fs.chownSync(dir, install.runAs.uid, install.runAs.gid);
    await core.createPersistentVolume({
      body: {
        metadata: { name: `pv-${claim}` },
        spec: {
          capacity: { storage: '100Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: STORAGE_CLASS,
          hostPath: { path: dir },
        },
      },
    });
    return dir;
  }

  /** A Pod's environment as a kubelet gives it: values, the fields of the Pod and the keys of Secrets it names. */
  async function envOf(pod: V1Pod, container: V1Container): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const e of container.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.fieldRef) {
        const field = e.valueFrom.fieldRef.fieldPath;
        const value = { 'metadata.name': pod.metadata?.name, 'metadata.namespace': pod.metadata?.namespace, 'status.podIP': pod.status?.podIP }[field];
        if (value === undefined) throw new Error(`the test plays no field ${field}`);
        env[e.name] = value;
      } else if (e.valueFrom?.secretKeyRef) {
        const { name, key } = e.valueFrom.secretKeyRef;
        const secret = await core.readNamespacedSecret({ namespace, name: name ?? '' });
        env[e.name] = Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
      } else throw new Error(`the test plays no ${JSON.stringify(e.valueFrom)} (env ${e.name})`);
    }
    return env;
  }

  /**
   * The Pod's network and files: a namespace with its IP, a forward from its side of the
   * link to the API server, the kubernetes Service's address and the Pod's token; returns how to run its
   * container's command there.
   */
  async function podSandbox(pod: V1Pod, volume: string, role: string, hosts: Record<string, string> = {}) {
    const podIp = pod.status!.podIP!;
    const hostSide = pairedAddress(podIp);
    const netns: NetnsSet = netnsSet();
    const node = netns.make(role);
    netns.link(null, `${hostSide}/31`, node, `${podIp}/31`);
    const apiPort = Number(new URL(cluster.url).port);
    const forward = net.createServer((socket) => {
      const upstream = net.connect(apiPort, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => forward.listen(apiPort, hostSide, resolve));
    const dir = fs.mkdtempSync(path.join(work, 'pod-'));
    fs.chmodSync(dir, 0o755);
    // The kubernetes Service's ClusterIP, as Pods reach the API server (its serving certificate names it): here
    // an address of the namespace's own, forwarded to the forward above.
    execFileSync('ip', ['-n', node.name, 'addr', 'add', `${KUBERNETES_SERVICE_IP}/32`, 'dev', 'lo']);
    const inside = node.spawn(process.execPath, [
      '-e',
      `const net = require('net');
       net.createServer((s) => { const u = net.connect(${apiPort}, '${hostSide}'); s.pipe(u).pipe(s); s.on('error', () => u.destroy()); u.on('error', () => s.destroy()); })
         .listen(443, '${KUBERNETES_SERVICE_IP}');`,
    ]);
    // The Pod's service account token, as the kubelet projects it: requested for the Pod, bound to it.
    const account = path.join(dir, 'serviceaccount');
    fs.mkdirSync(account, { mode: 0o755 });
    const token = await core.createNamespacedServiceAccountToken({
      namespace,
      name: pod.spec!.serviceAccountName!,
      body: {
        spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! } },
      },
    });
    fs.writeFileSync(path.join(account, 'token'), token.status!.token, { mode: 0o644 });
    fs.copyFileSync(cluster.caPath, path.join(account, 'ca.crt'));
    fs.chmodSync(path.join(account, 'ca.crt'), 0o644);
    fs.writeFileSync(path.join(account, 'namespace'), namespace, { mode: 0o644 });
    // The mount points of the Pod's /controller and /var/lib/postgresql (CloudNativePG names both): empty
    // directories of this machine, made once; what goes in them is the namespace's own tmpfs.
    for (const mountPoint of ['/controller', '/var/lib/postgresql']) fs.mkdirSync(mountPoint, { recursive: true });
    // The cluster's DNS, for the names the Pod looks up (a Service's, at the Pod behind it).
    const hostsFile = path.join(dir, 'hosts');
    fs.writeFileSync(
      hostsFile,
      ['127.0.0.1 localhost', ...Object.entries(hosts).map(([host, ip]) => `${ip} ${host} ${host}.${namespace} ${host}.${namespace}.svc`), ''].join('\n'),
      { mode: 0o644 },
    );
    const user = install.runAs?.name ?? os.userInfo().username;
    const bin = install.majors.get('15') ?? [...install.majors.values()][0];
    /** The container's command, in the namespace, with private /controller, /run and the volume mounted where the Pod has them. */
    const command = async (container: V1Container): Promise<[string, string[]]> => {
      const env = {
        ...(await envOf(pod, container)),
        KUBERNETES_SERVICE_HOST: KUBERNETES_SERVICE_IP,
        KUBERNETES_SERVICE_PORT: '443',
        HOME: '/controller',
        PATH: `${bin}:/usr/bin:/bin`,
      };
      const script = [
        'set -e',
        'mount -t tmpfs cnpg-controller /controller',
        'mount -t tmpfs cnpg-run /run',
        'mount -t tmpfs cnpg-home /var/lib/postgresql',
        'mkdir /var/lib/postgresql/data',
        `mount --bind "$VOLUME" /var/lib/postgresql/data`,
        'cp "$MANAGER" /controller/manager',
        'mkdir -p /run/secrets/kubernetes.io',
        'cp -r "$ACCOUNT" /run/secrets/kubernetes.io/serviceaccount',
        'mount --bind "$HOSTS" /etc/hosts',
        `chown ${user} /controller /run /var/lib/postgresql`,
        `exec runuser -u ${user} -- env -i "$@"`,
      ].join('\n');
      return [
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          'env',
          `VOLUME=${volume}`,
          `MANAGER=${manager}`,
          `ACCOUNT=${account}`,
          `HOSTS=${hostsFile}`,
          'sh',
          '-c',
          script,
          'sh',
          ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
          ...(container.command ?? []),
          ...(container.args ?? []),
        ],
      ];
    };
    // A finished Pod's network goes with it, as a kubelet frees it: KWOK may give its IP to the next Pod.
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await stopChild(inside, 'SIGKILL');
      await new Promise((resolve) => forward.close(resolve));
      netns.destroy();
    };
    cleanups.push(release);
    return { node, command, podIp, release };
  }

  /** Ends a Job's Pod as a kubelet does once its container exited 0. */
  async function succeeded(started: V1Pod): Promise<void> {
    const now = new Date();
    const pod = await core.readNamespacedPod({ namespace, name: started.metadata!.name! });
    await core.replaceNamespacedPodStatus({
      namespace,
      name: pod.metadata!.name!,
      body: {
        ...pod,
        status: {
          ...pod.status,
          phase: 'Succeeded',
          conditions: (pod.status?.conditions ?? []).map((c) =>
            c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False', reason: 'PodCompleted' } : c,
          ),
          containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({
            ...s,
            ready: false,
            started: false,
            state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: s.state?.running?.startedAt ?? now, finishedAt: now } },
          })),
        },
      },
    });
  }

  let podLinks = 0;
  /** A Pod network between two Pods' namespaces: a veth pair, each end a route to the other Pod's IP. */
  function linkPods(a: { node: Netns; podIp: string }, b: { node: Netns; podIp: string }): void {
    const base = `cpp${process.pid % 100_000}${++podLinks}`.slice(0, 13);
    const ip = (args: string[]) => execFileSync('ip', args);
    ip(['link', 'add', `${base}a`, 'type', 'veth', 'peer', 'name', `${base}b`]);
    for (const [end, side, other] of [
      [`${base}a`, a, b],
      [`${base}b`, b, a],
    ] as const) {
      ip(['link', 'set', end, 'netns', side.node.name]);
      ip(['-n', side.node.name, 'link', 'set', end, 'up']);
      ip(['-n', side.node.name, 'route', 'add', `${other.podIp}/32`, 'dev', end, 'src', side.podIp]);
    }
  }

  it('chooses the cloudnative-pg driver, as named', () => {
    expect(t.service.ctx.drivers.chosen.database).toBe('cloudnative-pg');
  });

  it('makes a Cluster the real operator runs, reads its status, applies users, logical databases, trusted sources and a reset password, and deletes it', async () => {
    expect(install.majors.has('15')).toBe(true);
    const created = await t.api('POST', '/api/v1/databases', { name: 'orders', region: 'fra1', version: '15', num_nodes: 1 });
    expect(created.status).toBe(201);
    const { id, password } = created.body.data;
    const name = objectName(id);

    // The Cluster as the driver wrote it (the operator adds its defaults beside).
    const made = (await eventually(() => clusterOf(name), 60_000, 250)) as { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
    expect(made.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': id });
    expect(made.spec).toMatchObject({
      instances: 1,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:15',
      storage: { size: '10Gi', storageClass: STORAGE_CLASS },
      bootstrap: { initdb: { database: 'defaultdb', owner: 'dbadmin', secret: { name: `${name}-admin` } } },
    });
    expect(JSON.stringify(made)).not.toContain(password);

    // The initdb Job's Pod, once scheduled on its claim: `manager instance init`, then Succeeded as a kubelet says it.
    const initVolume = await volumeFor(`${name}-1`);
    const initPod = await eventually(() => podWith(`cnpg.io/cluster=${name},cnpg.io/jobRole=initdb`), 120_000, 500);
    const initContainer = initPod.spec!.containers[0];
    const init = await podSandbox(initPod, initVolume, 'initdb');
    const [program, args] = await init.command(initContainer);
    await init.node.exec(program, args, 180_000);
    await succeeded(initPod);
    await init.release();

    // The instance's Pod: `manager instance run`, on the same volume, left running.
    const pod = await eventually(() => podWith(`cnpg.io/cluster=${name},cnpg.io/instanceName=${name}-1,cnpg.io/podRole=instance`), 120_000, 500);
    const instance = await podSandbox(pod, initVolume, 'instance');
    const postgresContainer = pod.spec!.containers.find((c) => c.name === 'postgres')!;
    const [runProgram, runArgs] = await instance.command(postgresContainer);
    const instanceLog = path.join(work, 'instance.log');
    const out = fs.openSync(instanceLog, 'a');
    const running = instance.node.spawn(runProgram, runArgs, { stdio: ['ignore', out, out] });
    cleanups.push(async () => {
      if (process.env.CLOUDPLANE_TEST_KEEP_LOGS) fs.copyFileSync(instanceLog, path.join(process.env.CLOUDPLANE_TEST_KEEP_LOGS, 'cnpg-instance.log'));
      await stopChild(running, 'SIGTERM');
    });

    const up = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 240_000).catch((err: Error) => {
      throw new Error(`${err.message}\ninstance:\n${fs.readFileSync(instanceLog, 'utf8').slice(-4000)}`);
    });
    expect(up).toMatchObject({
      version: '15',
      standby_nodes: 0,
      connection: { host: `${name}-rw.${namespace}.svc`, port: 5432, user: 'dbadmin', database: 'defaultdb', ssl_mode: 'require' },
    });
    const status = ((await clusterOf(name)) as { status: Record<string, unknown> }).status;
    // CloudNativePG's write Service, the API's host, selects the primary; nothing routes its ClusterIP here (no kube-proxy).
    const rw = await core.readNamespacedService({ namespace, name: `${name}-rw` });
    expect(rw.spec?.selector).toMatchObject({ 'cnpg.io/cluster': name, 'cnpg.io/instanceRole': 'primary' });
    expect(status).toMatchObject({ phase: 'Cluster in healthy state', readyInstances: 1, currentPrimary: `${name}-1`, writeService: `${name}-rw` });
    // Running waited for the administrator's password: the owner role initdb made has none until the instance manager sets it.
    const adminSecret = await core.readNamespacedSecret({ namespace, name: `${name}-admin` });
    expect(status.managedRolesStatus).toMatchObject({ passwordStatus: { dbadmin: { resourceVersion: adminSecret.metadata!.resourceVersion } } });

    // TLS verified against the Cluster's CA for the API's host name, at the Pod's IP (no kube-proxy routes the Service's ClusterIP here).
    const ca = await core.readNamespacedSecret({ namespace, name: `${name}-ca` });
    const connect = async (user: string, secret: string, database: string, host = instance.podIp) => {
      const client = new Client({
        host,
        port: 5432,
        user,
        password: secret,
        database,
        ssl: { ca: Buffer.from(ca.data!['ca.crt'], 'base64').toString('utf8'), servername: up.connection.host },
        connectionTimeoutMillis: 5_000,
      });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    };
    const admin = await connect('dbadmin', password, 'defaultdb');
    await admin.query('CREATE TABLE orders (id int)');
    await admin.query('INSERT INTO orders VALUES (1)');
    expect((await admin.query('SELECT count(*)::int AS n FROM orders')).rows[0].n).toBe(1);
    await admin.end();

    // A user (a managed role) and a logical database (a Database) through the API, used by the user.
    const user = await t.api('POST', `/api/v1/databases/${id}/users`, { name: 'app' });
    expect(user.status).toBe(201);
    expect((await t.api('POST', `/api/v1/databases/${id}/dbs`, { name: 'inventory' })).status).toBe(201);
    const app = await eventually(async () => connect('app', user.body.data.password, 'inventory'), 120_000, 1000);
    expect((await app.query('SELECT current_user AS u, current_database() AS d')).rows[0]).toEqual({ u: 'app', d: 'inventory' });
    await app.query('CREATE TEMP TABLE items (sku text)');
    await app.query("INSERT INTO items VALUES ('a-1')");
    await app.end();
    const dbs = await custom.listNamespacedCustomObject({ ...CNPG, namespace, plural: 'databases' });
    expect((dbs as { items: Array<{ spec: unknown }> }).items.map((d) => d.spec)).toEqual([
      expect.objectContaining({ name: 'inventory', owner: 'dbadmin', cluster: { name } }),
    ]);
    await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 60_000);

    // Trusted sources: only 192.0.2.0/24 from now on; the test's address is not in it. CloudNativePG's instance manager reloads pg_hba.
    expect((await t.api('PATCH', `/api/v1/databases/${id}`, { trusted_sources: [{ type: 'ip_addr', value: '192.0.2.0/24' }] })).status).toBe(200);
    const refused = await eventually(
      async () =>
        connect('dbadmin', password, 'defaultdb').then(
          async (client) => {
            await client.end();
            return null;
          },
          (err: Error) => err.message,
        ),
      120_000,
      1000,
    );
    expect(refused).toMatch(/pg_hba.conf rejects connection/);
    expect((await t.api('PATCH', `/api/v1/databases/${id}`, { trusted_sources: [] })).status).toBe(200);
    await eventually(async () => (await connect('dbadmin', password, 'defaultdb')).end().then(() => true), 120_000, 1000);

    // A reset password: CloudNativePG sets the new one from the Secret, and the old one stops.
    const reset = await t.api('POST', `/api/v1/databases/${id}/reset-password`);
    expect(reset.status).toBe(200);
    const newPassword: string = reset.body.data.password;
    await eventually(async () => (await connect('dbadmin', newPassword, 'defaultdb')).end().then(() => true), 120_000, 1000);
    await expect(connect('dbadmin', password, 'defaultdb')).rejects.toThrow(/password authentication failed/);
    await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 60_000);

    // A standby: CloudNativePG's join Job (pg_basebackup of the primary through the -rw Service), then its instance streaming.
    // (The base backup waits for a spread checkpoint, CloudNativePG's default: about a minute and a half.)
    expect((await t.api('PATCH', `/api/v1/databases/${id}`, { num_nodes: 2 })).status).toBe(200);
    const primary = { node: instance.node, podIp: instance.podIp };
    const joinVolume = await volumeFor(`${name}-2`);
    const joinPod = await eventually(() => podWith(`cnpg.io/cluster=${name},cnpg.io/jobRole=join`), 120_000, 500);
    const join = await podSandbox(joinPod, joinVolume, 'join', { [`${name}-rw`]: instance.podIp });
    linkPods(primary, join);
    const [joinProgram, joinArgs] = await join.command(joinPod.spec!.containers[0]);
    const joined = await join.node.exec(joinProgram, joinArgs, 180_000);
    if (process.env.CLOUDPLANE_TEST_KEEP_LOGS) fs.writeFileSync(path.join(process.env.CLOUDPLANE_TEST_KEEP_LOGS, 'cnpg-join.log'), joined);
    await succeeded(joinPod);
    await join.release();
    const standbyPod = await eventually(() => podWith(`cnpg.io/cluster=${name},cnpg.io/instanceName=${name}-2,cnpg.io/podRole=instance`), 120_000, 500);
    const standby = await podSandbox(standbyPod, joinVolume, 'standby', { [`${name}-rw`]: instance.podIp });
    linkPods(primary, standby);
    const [standbyProgram, standbyArgs] = await standby.command(standbyPod.spec!.containers.find((c) => c.name === 'postgres')!);
    const standbyLog = path.join(work, 'standby.log');
    const standbyOut = fs.openSync(standbyLog, 'a');
    const streaming = standby.node.spawn(standbyProgram, standbyArgs, { stdio: ['ignore', standbyOut, standbyOut] });
    cleanups.push(async () => {
      if (process.env.CLOUDPLANE_TEST_KEEP_LOGS) fs.copyFileSync(standbyLog, path.join(process.env.CLOUDPLANE_TEST_KEEP_LOGS, 'cnpg-standby.log'));
      await stopChild(streaming, 'SIGTERM');
    });
    await eventually(
      async () => {
        const body = (await t.api('GET', `/api/v1/databases/${id}`)).body.data;
        return body.status === 'running' && body.standby_nodes === 1 ? true : null;
      },
      240_000,
      1000,
    );
    const check = await connect('dbadmin', newPassword, 'defaultdb');
    await check.query('INSERT INTO orders VALUES (2)');
    await check.end();
    // Streamed: the row written on the primary is read on the standby (a hot standby, at its own Pod's IP).
    const replicated = await eventually(
      async () => {
        const reader = await connect('dbadmin', newPassword, 'defaultdb', standby.podIp);
        const { rows } = await reader.query<{ n: number; recovering: boolean }>('SELECT count(*)::int AS n, pg_is_in_recovery() AS recovering FROM orders');
        await reader.end();
        return rows[0].n === 2 ? rows[0] : null;
      },
      60_000,
      1000,
    );
    expect(replicated.recovering).toBe(true);

    // The passwords are in their Secrets alone: neither CloudNativePG's operator nor its instance manager logged one.
    for (const log of [path.join(work, 'operator.log'), instanceLog])
      for (const secret of [password, newPassword, user.body.data.password]) expect(fs.readFileSync(log, 'utf8')).not.toContain(secret);

    // Delete: the Database, the Cluster (CloudNativePG's objects go with it by their owner references) and the Secrets.
    expect((await t.api('DELETE', `/api/v1/databases/${id}`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/databases/${id}`, 'deleted', 120_000);
    await eventually(async () => ((await clusterOf(name)) === null ? true : null), 120_000, 500);
    await eventually(
      async () => {
        const left = await core.listNamespacedSecret({ namespace, labelSelector: `cloudplane.dev/id=${id}` });
        const services = await core.listNamespacedService({ namespace, labelSelector: `cnpg.io/cluster=${name}` });
        return left.items.length === 0 && services.items.length === 0 ? true : null;
      },
      120_000,
      500,
    );
  });

  it('made only calls the chart grants, none refused: the Cluster and Database applied', () => {
    const calls = expectOnlyListedCalls(cluster);
    const applied = new Set(calls.filter((c) => c.verb === 'patch' && c.namespace === namespace).map((c) => `${c.group}/${c.resource}`));
    expect([...applied]).toEqual(expect.arrayContaining(['postgresql.cnpg.io/clusters', 'postgresql.cnpg.io/databases', '/secrets']));
  });
});

/**
 * Databases in cluster mode with the kubernetes driver, on a real control plane whose
 * kubelets KWOK plays (test/helpers/workload-cluster.ts), the operator running under the
 * chart's RBAC. The test reads the real objects the driver made (the StatefulSet, its two
 * Services, the Secret, the ConfigMap, the claim its template makes), then plays the rest
 * of a node for the primary's Pod with real software, as the VPN tests play the agent's:
 * - a PersistentVolume for the claim (no provisioner here), so the Pod is scheduled;
 * - the kubelet and the image's entrypoint: Debian's PostgreSQL (initdb, pg_ctl, run as
 *   the `postgres` user) initialised as the `postgres` image does from the Secret the
 *   driver made (POSTGRES_USER, POSTGRES_DB, POSTGRES_PASSWORD: the verifier), the
 *   ConfigMap's first-start script run with psql, listening on the Pod's IP in a network
 *   namespace the test's own reaches (as a Pod network would let the operator), with the
 *   ConfigMap's pg_hba.conf as its hba_file, kept in step with the ConfigMap as a mounted
 *   ConfigMap is.
 * Then: the database runs, clients connect with the API's details at the Pod's address,
 * users and logical databases made through the API are used, trusted sources shut out
 * everyone else, a reset password takes, and delete removes every object and the claim.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { AppsV1Api, CoreV1Api, V1ConfigMap, V1PersistentVolumeClaim, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { findPostgres, PostgresInstall } from '../../src/drivers/local/postgres-install';
import { PG_VERSIONS } from '../../src/resources/database';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { HBA_KEY, INITDB_KEY, SECRET_KEYS } from '../../src/drivers/kubernetes/postgres-manifests';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { expectOnlyListedCalls, NAMESPACE as SYSTEM_NAMESPACE } from '../helpers/chart';
import { Netns, netnsSet, NetnsSet } from '../helpers/netns';

jest.setTimeout(300_000);

const exec = promisify(execFile);
const STORAGE_CLASS = 'db-test';

/** The other address of an IPv4 /31: the test's own end of a Pod's link. */
function pairedAddress(ip: string): string {
  const octets = ip.split('.').map(Number);
  octets[3] ^= 1;
  return octets.join('.');
}

const decoded = (secret: V1Secret, key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

describe('cluster mode: databases as a PostgreSQL StatefulSet', () => {
  let cluster: WorkloadCluster;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let t: TestService;
  let namespace: string;
  let install: PostgresInstall;
  let bin: string;
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeAll(async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-pgk8s-'));
    fs.chmodSync(root, 0o711);
    // make test installs PostgreSQL (scripts/ensure-tools.sh); without it this says what is missing.
    const found = findPostgres(null, root, PG_VERSIONS);
    if ('missing' in found) throw new Error(found.missing);
    install = found;
    cluster = await startWorkloadCluster({ crds: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    t = await startServiceUnderChartRbac(cluster, {
      CLOUDPLANE_DRIVER_DATABASE: 'kubernetes',
      CLOUDPLANE_DATABASE_STORAGE_CLASS: STORAGE_CLASS,
    });
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await t?.stop();
    await cluster?.stop();
  });

  const read = async <T>(call: () => Promise<T>): Promise<T | null> => call().catch((err) => (err?.code === 404 ? null : Promise.reject(err)));
  const objectsOf = async (id: string) => {
    const name = objectName(id);
    return {
      statefulSet: await read<V1StatefulSet>(() => apps.readNamespacedStatefulSet({ namespace, name })),
      service: await read<V1Service>(() => core.readNamespacedService({ namespace, name })),
      nodesService: await read<V1Service>(() => core.readNamespacedService({ namespace, name: `${name}-nodes` })),
      secret: await read<V1Secret>(() => core.readNamespacedSecret({ namespace, name })),
      configMap: await read<V1ConfigMap>(() => core.readNamespacedConfigMap({ namespace, name })),
    };
  };
  const claimOf = (id: string) =>
    read<V1PersistentVolumeClaim>(() => core.readNamespacedPersistentVolumeClaim({ namespace, name: `data-${objectName(id)}-0` }));

  /** A program of PostgreSQL's as its user, optionally inside `netns`. */
  const asPostgres = async (program: string, args: string[], netns?: Netns, env: Record<string, string> = {}) => {
    const command = [
      'runuser',
      '-u',
      install.runAs?.name ?? os.userInfo().username,
      '--',
      'env',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      program,
      ...args,
    ];
    if (netns) return netns.exec(command[0], command.slice(1), 120_000);
    return (await exec(command[0], command.slice(1), { timeout: 120_000 })).stdout;
  };

  /**
   * Plays the node and the image's entrypoint for the primary of database `id`: returns
   * once PostgreSQL listens at the Pod's IP.
   */
  async function playPrimary(id: string): Promise<{ podIp: string }> {
    // The volume the claim binds to, so the scheduler can place the Pod.
    await core.createPersistentVolume({
      body: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `pv-${objectName(id)}` },
        spec: {
          capacity: { storage: '100Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: STORAGE_CLASS,
          hostPath: { path: `/tmp/${objectName(id)}` },
        },
      },
    });
    const pod = await eventually(
      async () => {
        const found = await read(() => core.readNamespacedPod({ namespace, name: `${objectName(id)}-0` }));
        return found?.status?.podIP ? found : null;
      },
      90_000,
      250,
    );
    const podIp = pod.status!.podIP!;
    const { secret, configMap } = await objectsOf(id);

    const netns: NetnsSet = netnsSet();
    const node = netns.make('db');
    netns.link(null, `${pairedAddress(podIp)}/31`, node, `${podIp}/31`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-pgk8s-'));
    fs.chmodSync(dir, 0o711);
    const data = path.join(dir, 'data');
    const conf = path.join(dir, 'conf');
    const sockets = path.join(dir, 'sockets');
    for (const d of [conf, sockets]) fs.mkdirSync(d, { mode: 0o755 });
    if (install.runAs) for (const d of [dir, conf, sockets]) fs.chownSync(d, install.runAs.uid, install.runAs.gid);
    // The mounted ConfigMap: its pg_hba.conf, swapped in whole whenever the ConfigMap changes.
    const hbaFile = path.join(conf, HBA_KEY);
    const sync = (text: string) => {
      if (fs.existsSync(hbaFile) && fs.readFileSync(hbaFile, 'utf8') === text) return;
      fs.writeFileSync(`${hbaFile}.new`, text, { mode: 0o644 });
      fs.renameSync(`${hbaFile}.new`, hbaFile);
    };
    sync(configMap!.data![HBA_KEY]);
    let syncing = true;
    const syncLoop = (async () => {
      while (syncing) {
        const latest = await read(() => core.readNamespacedConfigMap({ namespace, name: objectName(id) })).catch(() => null);
        const text = latest?.data?.[HBA_KEY];
        if (text) sync(text);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();

    // The image's first start: initdb of POSTGRES_USER with POSTGRES_PASSWORD (here a verifier, stored as it is).
    const pwfile = path.join(dir, 'pwfile');
    fs.writeFileSync(pwfile, `${decoded(secret!, SECRET_KEYS.adminVerifier)}\n`, { mode: 0o600 });
    if (install.runAs) fs.chownSync(pwfile, install.runAs.uid, install.runAs.gid);
    await asPostgres(path.join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'dbadmin',
      `--pwfile=${pwfile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '-E',
      'UTF8',
    ]);
    fs.rmSync(pwfile);
    const options = [
      `-c listen_addresses=${podIp}`,
      '-c port=5432',
      `-c unix_socket_directories=${sockets}`,
      `-c hba_file=${hbaFile}`,
      '-c password_encryption=scram-sha-256',
    ].join(' ');
    await asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start'], node);
    cleanups.push(async () => {
      syncing = false;
      await syncLoop;
      await asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined);
      netns.destroy();
    });
    // POSTGRES_DB, then the ConfigMap's first-start script, run as the entrypoint runs it (psql on the socket).
    const psqlEnv = { PGHOST: sockets, PGPORT: '5432', PATH: `${bin}:${process.env.PATH ?? ''}` };
    await asPostgres(
      path.join(bin, 'psql'),
      ['-v', 'ON_ERROR_STOP=1', '-U', 'dbadmin', '-d', 'postgres', '-c', 'CREATE DATABASE defaultdb'],
      undefined,
      psqlEnv,
    );
    const script = path.join(dir, INITDB_KEY);
    fs.writeFileSync(script, configMap!.data![INITDB_KEY], { mode: 0o644 });
    await asPostgres('bash', [script], undefined, {
      ...psqlEnv,
      POSTGRES_USER: 'dbadmin',
      DB_OPERATOR_VERIFIER: decoded(secret!, SECRET_KEYS.operatorVerifier),
    });
    return { podIp };
  }

  async function connect(host: string, user: string, password: string, database: string): Promise<Client> {
    const client = new Client({ host, port: 5432, user, password, database, ssl: false, connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  it('chooses the kubernetes driver for databases in cluster mode', () => {
    expect(t.service.ctx.drivers.chosen.database).toBe('kubernetes');
  });

  it('makes the objects, runs on a real PostgreSQL at the Pod, applies users, logical databases and trusted sources, and deletes everything', async () => {
    const newest = [...install.majors.keys()].sort((a, b) => Number(a) - Number(b)).at(-1)!;
    bin = install.majors.get(newest)!;
    const created = await t.api('POST', '/api/v1/databases', { name: 'orders', region: 'fra1', version: newest });
    expect(created.status).toBe(201);
    const { id, password } = created.body.data;
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
      expect(object!.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Database', controller: true })]);
    }
    const sts = made.statefulSet!.spec!;
    expect(sts).toMatchObject({
      replicas: 1,
      serviceName: `${name}-nodes`,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
    });
    expect(sts.template.spec!.containers[0]).toMatchObject({
      image: `docker.io/library/postgres:${newest}`,
      resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '1Gi' } },
    });
    expect(sts.volumeClaimTemplates![0].spec).toMatchObject({
      accessModes: ['ReadWriteOnce'],
      storageClassName: STORAGE_CLASS,
      resources: { requests: { storage: '10Gi' } },
    });
    expect(made.service!.spec).toMatchObject({ type: 'ClusterIP', ports: [expect.objectContaining({ port: 5432 })] });
    expect(made.nodesService!.spec).toMatchObject({ clusterIP: 'None' });
    expect(decoded(made.secret!, SECRET_KEYS.password)).toBe(password);
    expect(decoded(made.secret!, SECRET_KEYS.username)).toBe('dbadmin');
    expect(decoded(made.secret!, SECRET_KEYS.host)).toBe(`${name}.${namespace}.svc`);
    // The password is in the Secret alone: not in the ConfigMap, nor in the Pod template (a verifier reaches initdb, from the Secret).
    expect(JSON.stringify(made.configMap)).not.toContain(password);
    expect(JSON.stringify(made.statefulSet)).not.toContain(password);
    expect(await claimOf(id)).toMatchObject({ spec: { storageClassName: STORAGE_CLASS, resources: { requests: { storage: '10Gi' } } } });

    const { podIp } = await playPrimary(id);
    const running = await waitForStatus(t, `/api/v1/databases/${id}`, 'running', 90_000);
    expect(running).toMatchObject({
      version: newest,
      standby_nodes: 0,
      connection: { host: `${name}.${namespace}.svc`, port: 5432, user: 'dbadmin', database: 'defaultdb', ssl_mode: 'disable' },
    });

    // A client with the API's user and password, at the Pod's address (the Service's name resolves in a cluster only).
    const admin = await connect(podIp, 'dbadmin', password, 'defaultdb');
    await admin.query('CREATE TABLE orders (id int)');
    await admin.query('INSERT INTO orders VALUES (1)');
    await admin.end();

    // A user and a logical database through the API, used by the user.
    const user = await t.api('POST', `/api/v1/databases/${id}/users`, { name: 'app' });
    expect(user.status).toBe(201);
    expect((await t.api('POST', `/api/v1/databases/${id}/dbs`, { name: 'inventory' })).status).toBe(201);
    // The database exists (and accepts connections) a moment before the driver has granted its users the public schema:
    // `data.created` is what says that it was applied whole.
    await eventually(
      async () => {
        const told = await t.api('GET', '/api/v1/audit-log?type=data.created&limit=100');
        return told.body.data.some((e: { data: { database_id?: string; name?: string } }) => e.data.database_id === id && e.data.name === 'inventory');
      },
      60_000,
      500,
    );
    const app = await connect(podIp, 'app', user.body.data.password, 'inventory');
    await app.query('CREATE TABLE items (sku text)');
    await app.query("INSERT INTO items VALUES ('a-1')");
    expect((await app.query('SELECT count(*)::int AS n FROM items')).rows[0].n).toBe(1);
    await app.end();

    // Trusted sources: only 192.0.2.0/24 from now on; the test's address is not in it, the operator's role still is.
    expect((await t.api('PATCH', `/api/v1/databases/${id}`, { trusted_sources: [{ type: 'ip_addr', value: '192.0.2.0/24' }] })).status).toBe(200);
    const refused = await eventually(
      async () =>
        connect(podIp, 'dbadmin', password, 'defaultdb').then(
          async (client) => {
            await client.end();
            return null;
          },
          (err: Error) => err.message,
        ),
      60_000,
      500,
    );
    expect(refused).toMatch(/no pg_hba.conf entry/);
    const edited = (await objectsOf(id)).configMap!.data![HBA_KEY];
    expect(edited).toContain('host all all 192.0.2.0/24 scram-sha-256');
    expect(edited).not.toContain('0.0.0.0/0');
    // Anyone with a password again, and the administrator's password reset: the new one takes, the old one stops.
    expect((await t.api('PATCH', `/api/v1/databases/${id}`, { trusted_sources: [] })).status).toBe(200);
    await eventually(async () => (await connect(podIp, 'dbadmin', password, 'defaultdb')).end().then(() => true), 60_000, 500);
    const reset = await t.api('POST', `/api/v1/databases/${id}/reset-password`);
    expect(reset.status).toBe(200);
    const newPassword = reset.body.data.password;
    await eventually(async () => (await connect(podIp, 'dbadmin', newPassword, 'defaultdb')).end().then(() => true), 60_000, 500);
    await expect(connect(podIp, 'dbadmin', password, 'defaultdb')).rejects.toThrow(/password authentication failed/);
    expect(decoded((await objectsOf(id)).secret!, SECRET_KEYS.password)).toBe(newPassword);
    expect((await waitForStatus(t, `/api/v1/databases/${id}`, 'running')).status_reason).toBeNull();

    // Delete removes every object it made, and the claim.
    expect((await t.api('DELETE', `/api/v1/databases/${id}`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/databases/${id}`, 'deleted', 60_000);
    await eventually(async () => Object.values(await objectsOf(id)).every((o) => o === null) && (await claimOf(id)) === null, 60_000, 250);
  });

  it('made only calls the chart grants, none refused: the StatefulSet, Services, Secret and ConfigMap applied', () => {
    const calls = expectOnlyListedCalls(cluster);
    const applied = new Set(calls.filter((c) => c.verb === 'patch' && c.namespace === namespace).map((c) => c.resource));
    expect([...applied]).toEqual(expect.arrayContaining(['statefulsets', 'services', 'secrets', 'configmaps']));
  });
});

/**
 * The local Kubernetes cluster driver: each cluster is a real control plane on this
 * machine, the embedded default's, so that `kubectl --kubeconfig` with the API's kubeconfig
 * answers. A cluster is a directory under CLOUDPLANE_LOCAL_KUBERNETES_DIR holding etcd's
 * data and kube-apiserver's keys, with three processes on free loopback ports: etcd,
 * kube-apiserver and KWOK, which plays the node pools' nodes (Nodes that run no containers).
 *
 * The kubeconfig's token is a bootstrap token (`<id>.<secret>`): a kube-system Secret the
 * API server reads, bound to cluster-admin through its group, so a rotation deletes the old
 * Secret and the old token stops at once, with no restart. The API server encrypts Secrets
 * in etcd (aesgcm, its key in the cluster's directory beside its other keys), so the token
 * is not written in plain text there. The driver reaches the API server with a token of its
 * own from the cluster's token file. The processes run on after the service stops, as
 * clusters outlive their control plane; one found stopped is started again by the next pass.
 */
import { spawn } from 'node:child_process';
import { generateKeyPair, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { KubernetesClusterDesired, KubernetesClusterDriver, KubernetesClusterObserved, KubernetesClusterOutputs } from '../kubernetes-cluster';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { isAlive, waitFor, writePrivateFile } from '../../lib/processes';
import { sameJson } from '../../lib/canonical-json';
import { freeLoopbackPorts } from '../../lib/ports';
import { BackgroundWork } from './background-work';
import type { KubernetesInstall } from './kube-install';
import {
  Applied,
  appliedOf,
  applyNodes,
  applyToken,
  encryptionConfigOf,
  KWOK_ANNOTATION,
  poolNodesOf,
  readyNodesOf,
  tokenOf,
} from '../kubernetes-cluster-inside';

const generateKeyPairAsync = promisify(generateKeyPair);

/** What the driver records of a cluster (status.external). */
const LocalClusterRecord = Type.Object({
  /** The minor that runs; null when the one asked for is not installed here. */
  minor: Type.Union([Type.String(), Type.Null()]),
  wanted: Type.Optional(Type.String()),
  ports: Type.Object({ etcd: Type.Integer(), peer: Type.Integer(), api: Type.Integer() }),
});
type LocalClusterRecord = Static<typeof LocalClusterRecord>;

/** The processes of a cluster, by name, with their pids (`processes.json`). */
const Pids = Type.Record(Type.String(), Type.Integer());
const PROCESSES = ['etcd', 'kube-apiserver', 'kwok'] as const;
type ProcessName = (typeof PROCESSES)[number];

const POLL_MS = 500;
const API_TIMEOUT_MS = 5_000;
export class LocalKubernetesClusterDriver implements KubernetesClusterDriver {
  private readonly work: BackgroundWork;

  constructor(
    private readonly install: KubernetesInstall,
    private readonly root: string,
    work: BackgroundWork,
  ) {
    this.work = work;
  }

  describe(): string {
    return `Kubernetes ${this.install.minor} control planes on this machine with KWOK nodes (clusters in ${this.root})`;
  }

  health(): DriverHealth {
    return this.work.health();
  }

  async observe(m: Managed<KubernetesClusterDesired>): Promise<Observation<KubernetesClusterOutputs, KubernetesClusterObserved>> {
    const record = recordOf(m.external);
    if (!record) return { exists: false };
    const pending = (rest: { failure?: string | null; rejected?: string | null } = {}) => ({
      exists: true as const,
      upToDate: true,
      ready: false,
      outputs: null,
      observed: { applying: false, refused: null, version: record.minor ?? '', node_pools: [] },
      failure: rest.failure ?? null,
      rejected: rest.rejected ?? null,
      pollAfterMs: POLL_MS,
    });
    if (record.minor === null) return pending({ failure: `Kubernetes ${record.wanted ?? ''} is not installed on this machine; it has ${this.install.minor}` });
    const work = this.work.workOf(m.id);
    if (work && !work.done) return pending();
    if (work?.failure && work.kind === 'create') return pending({ failure: work.failure });
    const dir = this.dirOf(m.id);
    const applied = readJson(path.join(dir, 'applied.json'), Applied);
    if (!applied) return { exists: false };

    const alive = this.running(dir);
    const nodes = alive ? await poolNodesOf(this.clientOf(dir, record), API_TIMEOUT_MS / 1000).catch(() => null) : null;
    const wanted = m.desired.version ?? record.minor;
    const refused =
      wanted !== record.minor
        ? `the local driver runs Kubernetes ${record.minor} (the kube-apiserver installed here) and does not move a cluster to ${wanted}`
        : work?.failure && work.kind === 'update'
          ? work.failure
          : null;
    const upToDate = alive && sameJson(applied, appliedOf(m.desired));
    const ready = nodes !== null;
    const poolsReady = readyNodesOf(m.desired.node_pools, nodes ?? []);
    return {
      exists: true,
      upToDate: upToDate || refused !== null,
      ready,
      outputs: { endpoint: `https://127.0.0.1:${record.ports.api}`, certificate_authority: readCertificateAuthority(dir) },
      observed: {
        applying: !upToDate && refused === null,
        refused,
        version: record.minor,
        node_pools: poolsReady,
      },
      failure: null,
      rejected: refused,
      // Nodes becoming ready, or a process found stopped: look again soon.
      pollAfterMs: !ready || poolsReady.some((pool, i) => pool.ready_nodes !== m.desired.node_pools[i]?.count) ? POLL_MS * 4 : undefined,
    };
  }

  async create(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    tokenOf(m.desired);
    const minor = m.desired.version ?? this.install.minor;
    if (minor !== this.install.minor) return { external: { minor: null, wanted: minor, ports: { etcd: 0, peer: 0, api: 0 } } };
    const [etcd, peer, api] = await freeLoopbackPorts(3);
    const record: LocalClusterRecord = { minor, ports: { etcd, peer, api } };
    this.work.begin(m.id, m.team, 'create', async () => {
      const dir = this.dirOf(m.id);
      await this.stopAll(dir);
      await fs.promises.rm(dir, { recursive: true, force: true });
      await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
      await this.prepare(dir);
      await this.converge(dir, record, m.desired);
    });
    return { external: record, pollAfterMs: POLL_MS };
  }

  // The Driver contract is asynchronous; the work itself runs in the background.
  update(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    const record = recordOf(m.external);
    if (!record?.minor) return this.create(m);
    tokenOf(m.desired);
    this.work.begin(m.id, m.team, 'update', () => this.converge(this.dirOf(m.id), record, m.desired));
    return Promise.resolve({ external: record, pollAfterMs: POLL_MS });
  }

  /** Stops the processes and removes the cluster's files, etcd's data among them. */
  delete(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    const external = m.external ?? {};
    this.work.begin(m.id, m.team, 'delete', async () => {
      const dir = this.dirOf(m.id);
      await this.stopAll(dir);
      await fs.promises.rm(dir, { recursive: true, force: true });
    });
    return Promise.resolve({ external, pollAfterMs: POLL_MS });
  }

  /** The keys and files a new cluster's control plane starts from. */
  private async prepare(dir: string): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
    writePrivateFile(path.join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    writePrivateFile(path.join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }).toString());
    writePrivateFile(path.join(dir, 'driver-token.csv'), `${randomBytes(24).toString('hex')},cloudplane-driver,cloudplane-driver,system:masters\n`);
    writePrivateFile(path.join(dir, 'encryption.yaml'), encryptionConfigOf(randomBytes(32).toString('base64')));
    await fs.promises.mkdir(path.join(dir, 'certs'), { mode: 0o700 });
  }

  /** Starts what is stopped, then brings the token and the nodes to the desired ones, and writes what it applied. */
  private async converge(dir: string, record: LocalClusterRecord, desired: KubernetesClusterDesired): Promise<void> {
    await this.startAll(dir, record);
    const kube = this.clientOf(dir, record);
    await applyToken(kube, tokenOf(desired));
    await applyNodes(kube, desired.node_pools);
    fs.writeFileSync(path.join(dir, 'applied.json'), JSON.stringify(appliedOf(desired)));
  }

  private async startAll(dir: string, record: LocalClusterRecord): Promise<void> {
    const { ports } = record;
    const pids = readJson(path.join(dir, 'processes.json'), Pids) ?? {};
    const start = (name: ProcessName, binary: string, args: string[]) => {
      const log = fs.openSync(path.join(dir, `${name}.log`), 'a');
      const child = spawn(binary, args, { detached: true, stdio: ['ignore', log, log] });
      fs.closeSync(log);
      child.unref();
      // The exit is seen by the next look (processes.json); an error to start is the same.
      child.on('error', () => undefined);
      pids[name] = child.pid ?? 0;
      fs.writeFileSync(path.join(dir, 'processes.json'), JSON.stringify(pids));
    };
    const etcdUrl = `http://127.0.0.1:${ports.etcd}`;
    if (!isOurs(pids.etcd, dir)) {
      start('etcd', this.install.etcd, [
        '--data-dir',
        path.join(dir, 'etcd'),
        '--listen-client-urls',
        etcdUrl,
        '--advertise-client-urls',
        etcdUrl,
        '--listen-peer-urls',
        `http://127.0.0.1:${ports.peer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${ports.peer}`,
        '--initial-cluster',
        `default=http://127.0.0.1:${ports.peer}`,
      ]);
    }
    await waitFor(
      'etcd',
      () =>
        fetch(`${etcdUrl}/health`, { signal: AbortSignal.timeout(2_000) }).then(
          (r) => r.ok,
          () => false,
        ),
      60_000,
    );
    if (!isOurs(pids['kube-apiserver'], dir)) {
      start('kube-apiserver', this.install.kubeApiServer, [
        '--etcd-servers',
        etcdUrl,
        '--cert-dir',
        path.join(dir, 'certs'),
        '--secure-port',
        String(ports.api),
        '--bind-address',
        '127.0.0.1',
        '--advertise-address',
        '127.0.0.1',
        '--service-account-issuer',
        'https://kubernetes.default.svc',
        '--service-account-key-file',
        path.join(dir, 'sa.pub'),
        '--service-account-signing-key-file',
        path.join(dir, 'sa.key'),
        '--token-auth-file',
        path.join(dir, 'driver-token.csv'),
        '--enable-bootstrap-token-auth',
        '--encryption-provider-config',
        path.join(dir, 'encryption.yaml'),
        '--authorization-mode',
        'Node,RBAC',
        '--service-cluster-ip-range',
        '10.96.0.0/16',
        // No controller manager runs here: none would make service accounts' tokens, nor lift
        // the not-ready taint TaintNodesByCondition puts on a new node.
        '--disable-admission-plugins',
        'ServiceAccount,TaintNodesByCondition',
        // KWOK watches from resourceVersion 0; an etcd older than 3.4.31 has no progress notifications for a watch-list.
        '--feature-gates',
        'WatchList=false',
      ]);
    }
    await waitFor('kube-apiserver', () => readyz(ports.api), 120_000);
    if (!isOurs(pids.kwok, dir)) {
      writePrivateFile(path.join(dir, 'driver.kubeconfig'), this.clientOf(dir, record).exportConfig());
      start('kwok', this.install.kwok, [
        '--kubeconfig',
        path.join(dir, 'driver.kubeconfig'),
        '--manage-nodes-with-annotation-selector',
        `${KWOK_ANNOTATION}=fake`,
        '--node-lease-duration-seconds',
        '40',
        '--cidr',
        '10.245.0.0/16',
        ...(this.install.kwokStages ? ['--config', this.install.kwokStages] : []),
      ]);
    }
  }

  /** SIGTERM to each process of the cluster, then SIGKILL to what is left after ten seconds. */
  private async stopAll(dir: string): Promise<void> {
    const pids = readJson(path.join(dir, 'processes.json'), Pids) ?? {};
    const ours = [...PROCESSES].reverse().flatMap((name) => (isOurs(pids[name], dir) ? [pids[name] ?? 0] : []));
    for (const pid of ours) process.kill(pid, 'SIGTERM');
    await waitFor('the cluster to stop', () => ours.every((pid) => !isOurs(pid, dir)), 10_000).catch(() => {
      for (const pid of ours) if (isOurs(pid, dir)) process.kill(pid, 'SIGKILL');
    });
  }

  /** The driver's own client of the cluster: its token, and the authority the API server's certificate comes from. */
  private clientOf(dir: string, record: LocalClusterRecord): KubeConfig {
    const token = fs.readFileSync(path.join(dir, 'driver-token.csv'), 'utf8').split(',')[0] ?? '';
    const kube = new KubeConfig();
    const ca = readCertificateAuthority(dir);
    kube.loadFromOptions({
      clusters: [
        { name: 'local', server: `https://127.0.0.1:${record.ports.api}`, ...(ca ? { caData: Buffer.from(ca).toString('base64') } : { skipTLSVerify: true }) },
      ],
      users: [{ name: 'cloudplane-driver', token }],
      contexts: [{ name: 'local', cluster: 'local', user: 'cloudplane-driver' }],
      currentContext: 'local',
    });
    return kube;
  }

  private running(dir: string): boolean {
    const pids = readJson(path.join(dir, 'processes.json'), Pids) ?? {};
    return PROCESSES.every((name) => isOurs(pids[name], dir));
  }

  private dirOf(id: string): string {
    return path.join(this.root, id);
  }
}

function recordOf(external: Managed<KubernetesClusterDesired>['external']): LocalClusterRecord | null {
  return Value.Check(LocalClusterRecord, external) ? external : null;
}

/** Whether `pid` is a live process of this cluster (its command line names the cluster's directory), not another that took the pid. */
function isOurs(pid: number | undefined, dir: string): boolean {
  if (!pid || !isAlive(pid)) return false;
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    // No /proc (macOS): a live pid is taken as ours.
    return true;
  }
}

/** The authority that signed kube-apiserver's own serving certificate: the last of the chain it writes. */
function readCertificateAuthority(dir: string): string | null {
  try {
    const chain =
      fs.readFileSync(path.join(dir, 'certs', 'apiserver.crt'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
    return chain.at(-1) ?? null;
  } catch {
    return null;
  }
}

function readJson<S extends Parameters<typeof Value.Check>[0]>(file: string, schema: S): Static<S> | null {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    return Value.Check(schema, parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** Whether kube-apiserver answers /readyz (open to anyone, as every API server serves it). */
function readyz(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(`https://127.0.0.1:${port}/readyz`, { rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => {
      resolve(false);
    });
    req.on('timeout', () => req.destroy());
  });
}

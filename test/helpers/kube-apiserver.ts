/**
 * A real Kubernetes API server for tests, started the way envtest does it: etcd and
 * kube-apiserver as child processes on free loopback ports, a static admin token, no
 * controllers and no kubelet. kube-apiserver is built once from the Go module proxy
 * (scripts/build-kube-component.sh); etcd is Debian's etcd-server (scripts/ensure-tools.sh).
 * The API server can be killed and restarted on the same port and etcd, so tests can
 * check that watches survive it. test/helpers/workload-cluster.ts adds the controller
 * manager, the scheduler and KWOK's fake nodes around one of these.
 */
import { ChildProcess, execFile, execFileSync } from 'node:child_process';
import { spawnTracked } from './processes';
import type { CoreV1Api } from '@kubernetes/client-node';
import { generateKeyPair, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import https from 'node:https';
import { promisify } from 'node:util';
import { packageRoot } from '../../src/lib/package-root';

const generateKeyPairAsync = promisify(generateKeyPair);

export interface KubeApiServer {
  url: string;
  token: string;
  /** Holds etcd's data, the keys and certificates below and the logs; removed by stop(). */
  workDir: string;
  /** The key that signs service account tokens (kube-controller-manager needs it too). */
  serviceAccountKeyPath: string;
  /** The CA that signed the API server's serving certificate (the cluster's root CA). */
  caPath: string;
  /** A kubeconfig file for kubectl and @kubernetes/client-node. */
  kubeconfigPath: string;
  kubeconfigYaml: string;
  /**
   * Kills kube-apiserver only (etcd keeps the data), as a crash would: a graceful stop
   * waits for open watches and takes over a minute.
   */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port. */
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/** The repository, from test/helpers (jest) or dist/test/helpers (a built benchmark) alike. */
const REPO = packageRoot(__dirname);

/**
 * The service accounts whose requests the API server audits: the namespace the chart's
 * tests install the operator's into (test/helpers/chart.ts). Metadata only (who, what,
 * where, the answer's code), so the tests can check the operator's calls against its RBAC.
 */
const AUDITED_SERVICE_ACCOUNTS = 'system:serviceaccounts:cloudplane-system';
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: ["${AUDITED_SERVICE_ACCOUNTS}"]
  - level: None
`;

/** With `auditWrites`: every write of any user, metadata only (the cluster benchmark counts them). */
const AUDIT_WRITES_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
`;

/** The audit log (JSON lines, audit.k8s.io/v1 Events) of a server started by startKubeApiServer. */
export function auditLogOf(server: Pick<KubeApiServer, 'workDir'>): string {
  return path.join(server.workDir, 'audit.log');
}

/**
 * The lines of the audit log written so far, parsed. The API server may be writing one as
 * it is read: a last line without its newline is left for the next read.
 */
export function auditLines(server: Pick<KubeApiServer, 'workDir'>): AuditEvent[] {
  const file = auditLogOf(server);
  if (!fs.existsSync(file)) return [];
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.pop(); // after the last newline: empty, or a line still being written
  return lines.filter((line) => line.trim()).map((line): AuditEvent => JSON.parse(line));
}

/** What the tests and the cluster benchmark read of an audit.k8s.io/v1 Event. */
export interface AuditEvent {
  stage: string;
  verb: string;
  user?: { username?: string };
  requestReceivedTimestamp: string;
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestURI: string;
  annotations?: Record<string, string>;
}

/**
 * The path a build script under scripts/ prints: the cached binary, built first if it is
 * missing. A tool that cannot be built fails the test that needs it, saying what to run.
 */
export function builtTool(what: string, script: string, ...args: string[]): string {
  try {
    return execFileSync(path.join(REPO, 'scripts', script), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new Error(
      `${what} is missing and scripts/${script} ${args.join(' ')} could not build it; run scripts/ensure-tools.sh (make test does):\n${stderr.slice(-3000) || String(err)}`,
    );
  }
}

export type KubeComponent = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

/** A control-plane component of the pinned release (scripts/build-kube-component.sh). */
export function kubeComponentBinary(component: KubeComponent): string {
  return builtTool(component, 'build-kube-component.sh', component);
}

export function kubeApiServerBinary(): string {
  if (process.env.KUBE_APISERVER_BIN) return process.env.KUBE_APISERVER_BIN;
  return kubeComponentBinary('kube-apiserver');
}

/** kubectl of the same release (scripts/build-kubectl.sh), not whatever kubectl is on PATH. */
export function kubectlBinary(): string {
  if (process.env.KUBECTL_BIN) return process.env.KUBECTL_BIN;
  return builtTool('kubectl', 'build-kubectl.sh');
}

/**
 * kubectl against the cluster of `kubeconfigPath`, asynchronously (a test's in-process
 * service keeps answering meanwhile): stdout, or an error carrying kubectl's stderr.
 */
export function kubectlOn(kubeconfigPath: string): (args: string[], input?: string) => Promise<string> {
  return (args, input) =>
    new Promise((resolve, reject) => {
      const child = execFile(kubectlBinary(), args, { env: { ...process.env, KUBECONFIG: kubeconfigPath }, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
        err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      if (input !== undefined) child.stdin!.end(input);
    });
}

export function etcdBinary(): string {
  const candidates = [process.env.ETCD_BIN, path.join(os.homedir(), '.cache/cloudplane/bin/etcd'), '/usr/bin/etcd', '/usr/local/bin/etcd'];
  const found = candidates.find((c) => c && fs.existsSync(c));
  if (!found) throw new Error('etcd not found: run `make test` (it installs etcd-server) or scripts/ensure-tools.sh');
  return found;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs `start` on freshly picked free ports, picking again when a child finds one taken: a
 * port is free when picked, but another test file's cluster may bind it before this child does.
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort());
    try {
      return await start(ports);
    } catch (err) {
      if (attempt >= 5 || !/address already in use/.test(String(err))) throw err;
    }
  }
}

export function spawnLogged(binary: string, args: string[], logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawnTracked(binary, args, { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  return child;
}

/** The status of a GET with the bearer token, or 0 when nothing answers. */
export function httpsStatus(url: string, token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = https.get(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

export async function waitUntil(what: string, probe: () => Promise<boolean>, child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
    if (await probe()) return;
    // Every test cluster's start waits here twice (etcd, kube-apiserver): a short poll keeps
    // that wait close to the component's own start-up.
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
}

export function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

export interface KubeApiServerOptions {
  /**
   * Runs the ServiceAccount admission plugin, as every real cluster does: Pods get their
   * service account and its token volume, and are refused until the namespace's `default`
   * ServiceAccount exists. Off by default, where no controller manager creates those.
   */
  serviceAccountAdmission?: boolean;
  /**
   * Serves watches from resourceVersion "0" as a plain watch (the WatchList feature off).
   * With it on (1.34's default), kube-apiserver turns such a watch into a watch-list
   * stream, which needs etcd's progress notifications (etcd >= 3.4.31): on Debian's etcd
   * 3.4.23 each one ends at once with "RequestWatchProgress is disabled". KWOK watches
   * from "0", so without this its informers relist with a growing backoff (up to 30 s)
   * instead of watching, and see new Pods and nodes' Pod CIDRs late.
   */
  plainWatchFromZero?: boolean;
  /** Audits every write, by anyone, instead of the operator's service accounts' requests. */
  auditWrites?: boolean;
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-kube-'));
  // The service-account signing key, made while etcd starts.
  const serviceAccountKeys = generateKeyPairAsync('rsa', { modulusLength: 2048 });
  const etcdLog = path.join(dir, 'etcd.log');
  const { etcd, etcdUrl } = await onFreePorts(2, async ([etcdPort, peerPort]) => {
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = spawnLogged(
      etcdBinary(),
      [
        '--data-dir',
        path.join(dir, `etcd-${etcdPort}`),
        '--listen-client-urls',
        etcdUrl,
        '--advertise-client-urls',
        etcdUrl,
        '--listen-peer-urls',
        `http://127.0.0.1:${peerPort}`,
        '--unsafe-no-fsync',
        // A single member elects itself: with the defaults (100 ms ticks, 1 s election) that
        // alone is half a second of every cluster's start.
        '--heartbeat-interval',
        '10',
        '--election-timeout',
        '100',
      ],
      etcdLog,
    );
    await waitUntil(
      'etcd',
      async () =>
        (await fetch(`${etcdUrl}/health`)
          .then((r) => r.ok)
          .catch(() => false)) as boolean,
      etcd,
      etcdLog,
      30_000,
    );
    return { etcd, etcdUrl };
  });

  const token = randomBytes(24).toString('hex');
  fs.writeFileSync(path.join(dir, 'tokens.csv'), `${token},admin,admin,system:masters\n`);
  const { privateKey, publicKey } = await serviceAccountKeys;
  fs.writeFileSync(path.join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  fs.writeFileSync(path.join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  fs.mkdirSync(path.join(dir, 'certs'));
  fs.writeFileSync(path.join(dir, 'audit-policy.yaml'), options.auditWrites ? AUDIT_WRITES_POLICY : AUDIT_POLICY);
  const binary = kubeApiServerBinary();
  let apiPort = 0;
  const apiArgs = () => [
    '--etcd-servers',
    etcdUrl,
    '--cert-dir',
    path.join(dir, 'certs'),
    '--secure-port',
    String(apiPort),
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
    path.join(dir, 'tokens.csv'),
    '--authorization-mode',
    'RBAC',
    '--service-cluster-ip-range',
    '10.0.0.0/24',
    ...(options.serviceAccountAdmission ? [] : ['--disable-admission-plugins', 'ServiceAccount']),
    ...(options.plainWatchFromZero ? ['--feature-gates', 'WatchList=false'] : []),
    '--allow-privileged=true',
    '--audit-policy-file',
    path.join(dir, 'audit-policy.yaml'),
    '--audit-log-path',
    auditLogOf({ workDir: dir }),
    // As OpenShift and hardened clusters run it: an ownerReference with blockOwnerDeletion
    // needs update on the owner's finalizers, which the chart's RBAC must then grant.
    '--enable-admission-plugins',
    'OwnerReferencesPermissionEnforcement',
  ];
  const apiLog = path.join(dir, 'kube-apiserver.log');
  let api: ChildProcess | undefined;
  // Started again on the same port (tests that stop and restart the API server).
  const startApiServer = async () => {
    api = spawnLogged(binary, apiArgs(), apiLog);
    await waitUntil('kube-apiserver', async () => (await httpsStatus(`https://127.0.0.1:${apiPort}/readyz`, token)) === 200, api, apiLog, 90_000);
  };
  await onFreePorts(1, async ([port]) => {
    apiPort = port;
    await startApiServer();
  });
  const url = `https://127.0.0.1:${apiPort}`;
  // kube-apiserver signs its own serving certificate with a CA it makes up, and writes the
  // certificate followed by that CA's into the cert dir.
  const caPath = path.join(dir, 'ca.crt');
  const servingChain =
    fs.readFileSync(path.join(dir, 'certs', 'apiserver.crt'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  fs.writeFileSync(caPath, servingChain[servingChain.length - 1] ?? '');

  const kubeconfigYaml = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: test',
    '  cluster:',
    `    server: ${url}`,
    '    insecure-skip-tls-verify: true',
    'users:',
    '- name: admin',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: test',
    '  context:',
    '    cluster: test',
    '    user: admin',
    'current-context: test',
    '',
  ].join('\n');
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kubeconfigPath, kubeconfigYaml, { mode: 0o600 });

  return {
    url,
    token,
    workDir: dir,
    serviceAccountKeyPath: path.join(dir, 'sa.key'),
    caPath,
    kubeconfigPath,
    kubeconfigYaml,
    stopApiServer: () => stopChild(api, 'SIGKILL'),
    startApiServer,
    async stop() {
      // Nothing of this server is kept, so there is no point in its graceful shutdown.
      await stopChild(api, 'SIGKILL');
      await stopChild(etcd);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Secret's data decoded to text, or undefined when there is no such Secret. */
export async function secretDataOf(core: CoreV1Api, namespace: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

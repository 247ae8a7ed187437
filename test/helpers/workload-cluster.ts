/**
 * A control plane that runs workloads without kubelets, for tests that need Deployments,
 * Pods, Services, Jobs and volumes to behave as in a cluster: the etcd + kube-apiserver of
 * kube-apiserver.ts, plus kube-controller-manager and kube-scheduler of the same pinned
 * release (scripts/build-kube-component.sh) and KWOK (scripts/build-kwok.sh), which plays
 * the kubelets of a few fake nodes. All of it runs as child processes on free loopback
 * ports and stops together, whatever happens (and processes.ts kills what a crashed test
 * file leaves behind).
 *
 * What happens here is the real components' work: the ReplicaSet, Deployment, Job,
 * EndpointSlice, garbage-collector, namespace, service-account and PV-binder controllers
 * of kube-controller-manager, the scheduler's placement, the node IPAM controller giving
 * each node its Pod CIDR. KWOK plays only what a kubelet and a container runtime would:
 * with KWOK's default stages (scripts/build-kwok.sh) a Pod bound to a node becomes Running
 * and Ready with an IP from that node's Pod CIDR, a Pod of a Job then exits 0, a Pod whose
 * deletion was requested goes away, and each node keeps its Lease renewed; with the stages
 * added here, an image from UNREACHABLE_REGISTRY fails to pull.
 *
 * Nothing runs any container, routes a Service's ClusterIP (no kube-proxy, no DNS) or
 * assigns a LoadBalancer Service its ingress address: load-balancer-addon.ts plays that
 * add-on where a test needs it.
 */
import { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig, V1Node } from '@kubernetes/client-node';
import { installCrds, kubeConfigOf } from './cluster';
import {
  builtTool,
  freePort,
  httpsStatus,
  KubeApiServer,
  kubeComponentBinary,
  kubectlOn,
  onFreePorts,
  spawnLogged,
  startKubeApiServer,
  stopChild,
  waitUntil,
} from './kube-apiserver';

export interface WorkloadClusterOptions {
  /** How many fake nodes KWOK plays (default 2). */
  nodes?: number;
  /** What each node offers the scheduler (default 16 CPUs, 64 GiB, 110 Pods). */
  allocatable?: { cpu: string; memory: string; pods: string };
  /** Installs Cloudplane's CRDs, for tests of what owns objects on the cluster (default false). */
  crds?: boolean;
  /**
   * Further CRDs (a directory of YAML files, applied server-side: some are too large for a
   * client-side apply's annotation), installed before the controller manager starts, so
   * that its garbage collector follows what they own from the start.
   */
  moreCrdsDir?: string;
  /**
   * Whether KWOK ends every Pod of a Job with exit 0 (its pod-complete stage; default true).
   * Off, a Job's Pod stays Running until the test, playing its kubelet, says how it ended.
   */
  completeJobPods?: boolean;
  /**
   * A file in the CRI log format (`<RFC 3339 time> stdout F <line>`): KWOK then serves the
   * kubelet's API on a loopback port, and every container's log (pods/log, `kubectl logs`)
   * is this file, as KWOK's ClusterLogs rule says. The nodes are then at 127.0.0.1, where
   * kube-apiserver reaches that server.
   */
  podLogsFile?: string;
}

export interface WorkloadCluster extends KubeApiServer {
  /** The fake nodes, Ready and each with its Pod CIDR. */
  nodeNames: string[];
  /** Admin access, for @kubernetes/client-node. */
  kubeConfig: KubeConfig;
}

/**
 * Pod addresses: kube-controller-manager's node IPAM gives each node a /24 of this. One per
 * jest worker: tests that put a real process at a KWOK Pod's IP (a VPN agent in a network
 * namespace) would otherwise be answered by another worker's cluster at the same address.
 */
export const POD_CIDR = `10.${244 + (Number(process.env.JEST_WORKER_ID ?? '1') % 8)}.0.0/16`;
/** ClusterIPs, as kube-apiserver.ts allocates them. */
export const SERVICE_CIDR = '10.0.0.0/24';
/** The annotation by which KWOK knows the nodes it plays (the one its documentation uses). */
const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

const DEFAULT_ALLOCATABLE = { cpu: '16', memory: '64Gi', pods: '110' };

/**
 * A registry no kubelet can reach: `.invalid` never resolves (RFC 2606). On the workload
 * cluster, KWOK fails the pull of every image under it as a kubelet would, so tests can
 * make a Pod whose image cannot be pulled.
 */
export const UNREACHABLE_REGISTRY = 'registry.invalid';

/**
 * Stages added to KWOK's defaults, in which KWOK plays the kubelet failing to pull an
 * image from UNREACHABLE_REGISTRY: the container waits with ErrImagePull, then
 * ImagePullBackOff, then ErrImagePull again on the next attempt, and the Pod stays
 * Pending and not Ready, as on a real node. Their weight makes KWOK play them rather than
 * its pod-ready stage, which matches the same Pending Pods.
 */
function imagePullFailureStages(): string {
  const stage = (name: string, from: string | null, to: string, delayMs: number) => `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ${name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.spec.containers.[] | select( .image | startswith("${UNREACHABLE_REGISTRY}/") ) | .name'
      operator: 'Exists'
    - key: '.status.containerStatuses.[].state.waiting.reason'
${
  from === null
    ? "      operator: 'DoesNotExist'"
    : `      operator: 'In'
      values: ['${from}']`
}
  weight: 10000
  delay:
    durationMilliseconds: ${delayMs}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: ""
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
      {{ if hasPrefix "${UNREACHABLE_REGISTRY}/" .image }}
            reason: ${to}
            message: {{ ${to === 'ErrImagePull' ? `printf "failed to pull and unpack image %q: failed to resolve reference %q: dial tcp: lookup ${UNREACHABLE_REGISTRY}: no such host" .image .image` : `printf "Back-off pulling image %q" .image`} | Quote }}
      {{ else }}
            reason: ContainerCreating
      {{ end }}
      {{ end }}
      {{ with NodeIPWith .spec.nodeName }}
      hostIP: {{ . | Quote }}
      {{ end }}
      phase: Pending
      startTime: {{ or .status.startTime $now | Quote }}
`;
  return [
    stage('pod-image-pull-failed', null, 'ErrImagePull', 0),
    stage('pod-image-pull-back-off', 'ErrImagePull', 'ImagePullBackOff', 1000),
    stage('pod-image-pull-retried', 'ImagePullBackOff', 'ErrImagePull', 4000),
  ].join('');
}

/** The stages of a multi-document YAML, less those named. */
function stagesWithout(yaml: string, names: string[]): string {
  if (names.length === 0) return yaml;
  const documents = yaml.split(/^---$/m);
  return documents.filter((doc) => !names.some((name) => new RegExp(`^  name: ${name}$`, 'm').test(doc))).join('---');
}

/** Applies every CRD of `dir` server-side and waits until each is established. */
async function installCrdsFrom(server: KubeApiServer, dir: string): Promise<void> {
  const kubectl = kubectlOn(server.kubeconfigPath);
  await kubectl(['apply', '--server-side', '-f', dir]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', dir]);
}

/** KWOK and the stages it plays, written beside it by scripts/build-kwok.sh. */
export function kwokTool(): { binary: string; stages: string } {
  const binary = builtTool('kwok', 'build-kwok.sh');
  return { binary, stages: path.join(path.dirname(binary), 'stages.yaml') };
}

/**
 * A controller-manager or scheduler on a free port, up once its /healthz answers. Both
 * authenticate callers against the API server and serve with a self-signed certificate.
 */
async function startComponent(name: 'kube-controller-manager' | 'kube-scheduler', server: KubeApiServer, args: string[]): Promise<ChildProcess> {
  const binary = kubeComponentBinary(name);
  const log = path.join(server.workDir, `${name}.log`);
  return onFreePorts(1, async ([port]) => {
    const child = spawnLogged(
      binary,
      [
        '--kubeconfig',
        server.kubeconfigPath,
        '--authentication-kubeconfig',
        server.kubeconfigPath,
        '--authorization-kubeconfig',
        server.kubeconfigPath,
        '--bind-address',
        '127.0.0.1',
        '--secure-port',
        String(port),
        '--cert-dir',
        path.join(server.workDir, `${name}-certs`),
        // One instance per cluster: leader election would only delay its start.
        '--leader-elect=false',
        ...args,
      ],
      log,
    );
    try {
      await waitUntil(name, async () => (await httpsStatus(`https://127.0.0.1:${port}/healthz`, server.token)) === 200, child, log, 60_000);
    } catch (err) {
      await stopChild(child, 'SIGKILL');
      throw err;
    }
    return child;
  });
}

/**
 * KWOK's rule that serves `logsFile` as the log of every container of every Pod (its
 * ClusterLogs kind, read from its configuration like the stages).
 */
function clusterLogsRule(logsFile: string): string {
  return `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: every-container
spec:
  logs:
  - logsFile: ${JSON.stringify(logsFile)}
    follow: false
`;
}

/**
 * `loopback`: kube-apiserver reaches the node's kubelet (KWOK's server) at 127.0.0.1: it
 * dials the first address of its preferred types, Hostname first, so that one is
 * `localhost`, not the node's name.
 */
function fakeNode(name: string, index: number, allocatable: WorkloadClusterOptions['allocatable'] & object, loopback = false): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
    // No taint: Pods need no toleration to land here, as on an ordinary worker node.
    spec: {},
    // A kubelet registers its node with its status; KWOK's node-initialize stage keeps
    // these and adds the conditions. Each node gets its own InternalIP.
    status: {
      allocatable,
      capacity: allocatable,
      addresses: [
        { type: 'InternalIP', address: loopback ? '127.0.0.1' : `10.240.0.${index + 10}` },
        { type: 'Hostname', address: loopback ? 'localhost' : name },
      ],
    },
  };
}

/** Ready, given its Pod CIDR, and no longer tainted as not ready: Pods can be placed. */
function schedulable(node: V1Node): boolean {
  const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const tainted = node.spec?.taints?.some((t) => t.key.startsWith('node.kubernetes.io/'));
  return Boolean(ready && node.spec?.podCIDR && !tainted);
}

export async function startWorkloadCluster(options: WorkloadClusterOptions = {}): Promise<WorkloadCluster> {
  const nodeCount = options.nodes ?? 2;
  const allocatable = options.allocatable ?? DEFAULT_ALLOCATABLE;
  // Found (or built) before anything starts, so a missing tool fails fast and clearly.
  kubeComponentBinary('kube-controller-manager');
  kubeComponentBinary('kube-scheduler');
  const kwok = kwokTool();

  const server = await startKubeApiServer({ serviceAccountAdmission: true, plainWatchFromZero: true });
  const children: ChildProcess[] = [];
  const stopAll = async () => {
    // Nothing of this cluster is kept: no graceful shutdowns.
    await Promise.all(children.splice(0).map((child) => stopChild(child, 'SIGKILL')));
    await server.stop();
  };
  try {
    // Before the controller manager starts, so that its garbage collector knows the kinds
    // from the start: CRDs it discovers later take it up to 30 s to follow, and until then
    // deleting a custom resource leaves what it owns in place.
    if (options.crds) await installCrds(server);
    if (options.moreCrdsDir) await installCrdsFrom(server, options.moreCrdsDir);
    children.push(
      await startComponent('kube-controller-manager', server, [
        // Each controller with its own service account and RBAC role, as in kubeadm's
        // clusters; their tokens are signed with the API server's service-account key.
        '--use-service-account-credentials=true',
        '--service-account-private-key-file',
        server.serviceAccountKeyPath,
        '--root-ca-file',
        server.caPath,
        '--controllers',
        '*',
        '--allocate-node-cidrs=true',
        '--cluster-cidr',
        POD_CIDR,
        '--service-cluster-ip-range',
        SERVICE_CIDR,
      ]),
    );
    children.push(await startComponent('kube-scheduler', server, []));

    const kwokLog = path.join(server.workDir, 'kwok.log');
    const stagesFile = path.join(server.workDir, 'kwok-stages.yaml');
    fs.writeFileSync(
      stagesFile,
      stagesWithout(fs.readFileSync(kwok.stages, 'utf8'), options.completeJobPods === false ? ['pod-complete'] : []) +
        imagePullFailureStages() +
        (options.podLogsFile ? clusterLogsRule(options.podLogsFile) : ''),
    );
    // KWOK's kubelet server (HTTPS with a certificate of its own, which kube-apiserver does
    // not check without --kubelet-certificate-authority); its port is each node's kubelet port.
    const kubeletPort = options.podLogsFile ? await freePort() : 0;
    children.push(
      spawnLogged(
        kwok.binary,
        [
          '--kubeconfig',
          server.kubeconfigPath,
          '--config',
          stagesFile,
          '--manage-nodes-with-annotation-selector',
          `${KWOK_NODE_ANNOTATION}=fake`,
          // Heartbeats through each node's Lease, as kubelets do (KWOK's default is 40 s).
          '--node-lease-duration-seconds',
          '40',
          // Used only for a node without a Pod CIDR (none here once started); kept apart
          // from the ClusterIP range all the same.
          '--cidr',
          '10.245.0.0/16',
          ...(kubeletPort ? ['--server-address', `127.0.0.1:${kubeletPort}`, '--node-port', String(kubeletPort)] : []),
        ],
        kwokLog,
      ),
    );
    const kwokProcess = children[children.length - 1];

    const kubeConfig = kubeConfigOf(server);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const nodeNames = Array.from({ length: nodeCount }, (_, i) => `kwok-node-${i}`);
    for (const [i, name] of nodeNames.entries()) await core.createNode({ body: fakeNode(name, i, allocatable, Boolean(options.podLogsFile)) });
    // Until every node can take Pods and the controller manager has made the `default`
    // service account that Pods in `default` need (the ServiceAccount admission plugin).
    await waitUntil(
      'the fake nodes (KWOK) and kube-controller-manager',
      async () => {
        const nodes = await core.listNode().catch(() => undefined);
        const ready = nodes?.items.filter(schedulable).length === nodeCount;
        const account = await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }).catch(() => undefined);
        return ready && account !== undefined;
      },
      kwokProcess,
      kwokLog,
      60_000,
    );
    return { ...server, nodeNames, kubeConfig, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * The cluster-mode Kubernetes cluster driver: each cluster is a hosted control plane in its
 * team's namespace (after Kamaji and vcluster): etcd as a StatefulSet, kube-apiserver,
 * kube-controller-manager and kube-scheduler as Deployments, and KWOK (the `kwok` node
 * provider) playing the node pools' nodes, built by kubernetes-cluster-manifests.ts and
 * written by server-side apply as the other drivers' objects are.
 *
 * The driver makes the cluster's PKI once (lib/x509.ts), after the API Service, whose
 * ClusterIP the serving certificate names, and keeps it in the cluster's Secrets, reading
 * it back on every later pass. It reaches the hosted API server as the user gets it: at the
 * cluster's `endpoint`, the Service's ClusterIP (the operator runs in the cluster, where a
 * ClusterIP routes), with a client certificate of its own (system:masters). Once the API
 * server answers /readyz, the driver does inside it what the local driver does
 * (kubernetes-cluster-inside.ts): the kubeconfig's bootstrap token Secret in kube-system
 * (a rotation deletes the old one) and the pools' nodes. The cluster runs while /readyz
 * answers; it is degraded when it stops; an upgrade is done when /version answers the new
 * minor.
 *
 * Refused, and said in `rejected` while the cluster runs on as it is: a change of `ha`
 * after creation for etcd (its member count is fixed once it formed a cluster; the API
 * servers follow `ha`), and a version older than the one that runs.
 *
 * An object under the cluster's names that Cloudplane did not make for it is never
 * touched: the cluster fails, saying what is in the way.
 */
import { randomBytes } from 'node:crypto';
import https from 'node:https';
import type { KubeConfig, V1ConfigMap, V1Deployment, V1PersistentVolumeClaim, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { KubeConfig as KubeConfigClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { KUBERNETES_VERSIONS } from '../../resources/kubernetes-cluster';
import type { KubernetesClusterDesired, KubernetesClusterDriver, KubernetesClusterObserved, KubernetesClusterOutputs } from '../kubernetes-cluster';
import type { DriverHealth, Managed, Observation, Step } from '../types';
import { Applied, appliedOf, applyNodes, applyToken, poolNodesOf, readyNodesOf, tokenOf } from '../kubernetes-cluster-inside';
import { sameJson } from '../../lib/canonical-json';
import { messageOf } from '../../lib/unknown-values';
import { AppliedObjects, holdsDesired, ObjectHeader } from './applied';
import { madeFor, Placement, placementOf } from './objects';
import { Changed, MadeWatchOptions, watchMade } from './made-watch';
import {
  apiServiceOf,
  DEFAULT_HOSTED_CLUSTER_SETTINGS,
  deploymentName,
  encryptionKeyOf,
  endpointOf,
  etcdMembers,
  etcdName,
  hostedClusterObjects,
  HostedClusterObjects,
  HostedClusterSettings,
  HostedShape,
  componentIdentities,
  componentIdentityOf,
  issueComponentIdentity,
  minorOf,
  newPki,
  Pki,
  PKI_KEYS,
  pkiBaseOf,
  pkiOf,
  secretName,
} from './kubernetes-cluster-manifests';

export interface HostedKubernetesClusterDriverOptions extends MadeWatchOptions {
  kubeConfig: KubeConfig;
  systemNamespace: string;
  logger: Logger;
  /** Images, the claims' StorageClass and the node provider (defaults: DEFAULT_HOSTED_CLUSTER_SETTINGS). */
  settings?: Partial<HostedClusterSettings>;
  requestTimeoutMs?: number;
  /** How soon to look again while something is under way (default 2 s). */
  progressPollMs?: number;
  /** How often a running cluster's API server is asked whether it answers (default 15 s). */
  healthPollMs?: number;
  /** Each call to a hosted API server (default 5 s). */
  apiTimeoutMs?: number;
}

const DEFAULT_PROGRESS_POLL_MS = 2_000;
const DEFAULT_HEALTH_POLL_MS = 15_000;
const DEFAULT_API_TIMEOUT_MS = 5_000;

/** What the driver records of a cluster (status.external). */
const HostedRecord = Type.Object({
  /** The minor the control plane's images are of. */
  version: Type.String(),
  /** etcd's members, fixed when it was made. */
  etcd_members: Type.Integer(),
  storage_class: Type.Union([Type.String(), Type.Null()]),
  /** What was last applied inside the cluster (the token, the nodes); null before the first time. */
  applied: Type.Union([Applied, Type.Null()]),
});
type HostedRecord = Static<typeof HostedRecord>;

/** The kinds, in the order they are deleted: the node provider and the control plane first, the Secrets last. */
const KINDS = [
  { key: 'kwok', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'scheduler', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'controllerManager', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'apiserver', apiVersion: 'apps/v1', kind: 'Deployment' },
  { key: 'apiService', apiVersion: 'v1', kind: 'Service' },
  { key: 'etcd', apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { key: 'etcdService', apiVersion: 'v1', kind: 'Service' },
  { key: 'kwokStages', apiVersion: 'v1', kind: 'ConfigMap' },
  { key: 'connection', apiVersion: 'v1', kind: 'Secret' },
  { key: 'kwokConfig', apiVersion: 'v1', kind: 'Secret' },
  { key: 'schedulerConfig', apiVersion: 'v1', kind: 'Secret' },
  { key: 'controllerManagerConfig', apiVersion: 'v1', kind: 'Secret' },
  { key: 'encryption', apiVersion: 'v1', kind: 'Secret' },
  { key: 'pki', apiVersion: 'v1', kind: 'Secret' },
] as const satisfies ReadonlyArray<{ key: keyof HostedClusterObjects; apiVersion: string; kind: string }>;
type Key = (typeof KINDS)[number]['key'];
type Live = { [K in Key]: (V1Secret | V1ConfigMap | V1Service | V1StatefulSet | V1Deployment) | null };

/** The order objects are applied in: what the Pods read (Secrets, the ConfigMap) before the Pods' owners, etcd before the API servers. */
const APPLY_ORDER: readonly Key[] = [
  'pki',
  'encryption',
  'controllerManagerConfig',
  'schedulerConfig',
  'kwokConfig',
  'connection',
  'kwokStages',
  'etcdService',
  'etcd',
  'apiService',
  'apiserver',
  'controllerManager',
  'scheduler',
  'kwok',
];

/** What the hosted API server answered. */
interface Answer {
  ready: boolean;
  /** The minor /version says; null when it did not answer. */
  version: string | null;
  /** The pools' nodes; null when they could not be listed. */
  nodes: Awaited<ReturnType<typeof poolNodesOf>> | null;
  /** Why it is not ready. */
  reason: string | null;
}

export class HostedKubernetesClusterDriver implements KubernetesClusterDriver {
  private readonly objects: AppliedObjects;
  private readonly settings: HostedClusterSettings;
  private readonly progressPollMs: number;
  private readonly healthPollMs: number;
  private readonly apiTimeoutMs: number;

  constructor(private readonly o: HostedKubernetesClusterDriverOptions) {
    this.objects = new AppliedObjects(o.kubeConfig, o.requestTimeoutMs);
    this.settings = { ...DEFAULT_HOSTED_CLUSTER_SETTINGS, ...o.settings };
    this.progressPollMs = o.progressPollMs ?? DEFAULT_PROGRESS_POLL_MS;
    this.healthPollMs = o.healthPollMs ?? DEFAULT_HEALTH_POLL_MS;
    this.apiTimeoutMs = o.apiTimeoutMs ?? DEFAULT_API_TIMEOUT_MS;
  }

  health(): DriverHealth {
    return this.objects.outcomes.health();
  }

  /** Its Pods (an API server becoming Ready, a Pod deleted) and Services changed by others are looked at at once. */
  watchMade(changed: Changed): () => void {
    return watchMade(this.o, ['pods', 'services'], changed);
  }

  async observe(m: Managed<KubernetesClusterDesired>): Promise<Observation<KubernetesClusterOutputs, KubernetesClusterObserved>> {
    const placement = this.placementOf(m);
    const live = await this.readLive(placement);
    if (KINDS.every(({ key }) => live[key] === null) && (await this.claimsOf(m, placement)).length === 0) return { exists: false };
    const record = recordOf(m.external) ?? this.newRecord(m);
    const pending = {
      exists: true as const,
      upToDate: true,
      ready: false as const,
      outputs: null,
      observed: { applying: false, refused: null, version: record.version, node_pools: [], unreachable: null },
    };
    const foreign = inTheWay(live, m.id, placement);
    if (foreign) return { ...pending, failure: foreign };

    const clusterIp = (live.apiService as V1Service | null)?.spec?.clusterIP ?? null;
    const pki = keptPki(live);
    const encryptionKey = encryptionKeyOf(live.encryption);
    const token = m.desired.token;
    const shape = this.shapeOf(m, record);
    const wanted =
      pki && encryptionKey && clusterIp && token ? hostedClusterObjects(m, placement, this.settings, shape, pki, encryptionKey, clusterIp, token) : null;
    const objectsUpToDate = wanted !== null && KINDS.every(({ key }) => holdsDesired(live[key], wanted[key]));

    const answer: Answer = pki && clusterIp ? await this.ask(endpointOf(clusterIp), pki) : { ready: false, version: null, nodes: null, reason: 'not made yet' };
    const rejected = this.refusalOf(m, record);
    const upToDate = objectsUpToDate && sameJson(record.applied, appliedOf(m.desired)) && record.version === shape.version && answer.version === shape.version;
    const settled =
      answer.ready && upToDate && readyNodesOf(m.desired.node_pools, answer.nodes ?? []).every((p, i) => p.ready_nodes === m.desired.node_pools[i]?.count);
    return {
      exists: true,
      upToDate: upToDate || rejected !== null,
      ready: answer.ready,
      outputs: pki && clusterIp ? { endpoint: endpointOf(clusterIp), certificate_authority: pki[PKI_KEYS.caCert] } : null,
      observed: {
        applying: !upToDate && rejected === null,
        refused: rejected,
        version: answer.version ?? record.version,
        node_pools: readyNodesOf(m.desired.node_pools, answer.nodes ?? []),
        unreachable: answer.ready ? null : answer.reason,
      },
      failure: null,
      rejected,
      pollAfterMs: settled ? this.healthPollMs : this.progressPollMs,
    };
  }

  async create(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    return this.apply(m, recordOf(m.external) ?? this.newRecord(m));
  }

  async update(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    return this.apply(m, recordOf(m.external) ?? this.newRecord(m));
  }

  /** Deletes every object made for the cluster, and etcd's claims (no etcd data is left behind). */
  async delete(m: Managed<KubernetesClusterDesired>): Promise<Step> {
    const placement = this.placementOf(m);
    const live = await this.readLive(placement);
    for (const { key, apiVersion, kind } of KINDS) {
      // Only what was made for this cluster: someone else's object of the same name stays.
      if (!madeFor(live[key]?.metadata, m.id)) continue;
      if (await this.objects.delete({ apiVersion, kind, metadata: { namespace: placement.namespace, name: nameOf(placement, key) } }))
        this.o.logger.info({ id: m.id, ...placement, kind, name: nameOf(placement, key) }, 'Kubernetes cluster object deleted');
    }
    // The claims go with the StatefulSet (its retention policy); deleted here too, should its controller be slow or off.
    for (const claim of await this.claimsOf(m, placement))
      if (!claim.metadata?.deletionTimestamp)
        await this.objects.delete({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { namespace: placement.namespace, name: claim.metadata?.name ?? '' },
        });
    return { external: m.external ?? {}, pollAfterMs: this.progressPollMs };
  }

  /**
   * Applies the API Service (its ClusterIP is in the serving certificate), the PKI made
   * once, then every other object; once the API server answers, the token and the nodes.
   */
  private async apply(m: Managed<KubernetesClusterDesired>, record: HostedRecord): Promise<Step> {
    const placement = this.placementOf(m);
    const shape = this.shapeOf(m, record);
    const next: HostedRecord = { ...record, version: shape.version };
    const step: Step = { external: record, pollAfterMs: this.progressPollMs };
    const live = await this.readLive(placement);
    if (inTheWay(live, m.id, placement)) return step; // observe reports it; nothing of someone else's is touched
    const token = tokenOf(m.desired);

    // API call: drivers: applied objects (ConfigMaps, Services)
    const service = await this.objects.apply(apiServiceOf(m, placement));
    const clusterIp = service.ok ? service.value.spec?.clusterIP : undefined;
    if (!clusterIp) return step;
    const pki = keptPki(live) ?? (await completedPki(live, placement, clusterIp));
    const encryptionKey = encryptionKeyOf(live.encryption) ?? randomBytes(32).toString('base64');
    const wanted = hostedClusterObjects(m, placement, this.settings, shape, pki, encryptionKey, clusterIp, token);
    // API call: store and drivers: secrets, written (a Kubernetes cluster's PKI, kubeconfigs and connection Secret)
    // API call: drivers: StatefulSets
    // API call: drivers: StatefulSets, created by apply
    // API call: drivers: Deployments
    // The nodes' provider is KWOK, the only one for now (settings.nodeProvider): its Deployment is among them.
    for (const key of APPLY_ORDER) await this.objects.apply(wanted[key]);
    if (!live.apiserver) this.o.logger.info({ id: m.id, ...placement, version: shape.version, etcd_members: shape.etcd_members }, 'Kubernetes cluster applied');

    const answer = await this.ask(endpointOf(clusterIp), pki);
    if (!answer.ready) return { ...step, external: next };
    const kube = this.clientOf(endpointOf(clusterIp), pki);
    const applied = await this.bounded(async () => {
      await applyToken(kube, token);
      await applyNodes(kube, m.desired.node_pools);
      return appliedOf(m.desired);
    }).catch((err: unknown) => {
      this.o.logger.warn({ id: m.id, ...placement, err: messageOf(err) }, "could not apply a Kubernetes cluster's token and nodes yet");
      return record.applied;
    });
    return { ...step, external: { ...next, applied } };
  }

  /** What the cluster is made of: the minor asked for (never an older one than runs), etcd's members as made. */
  private shapeOf(m: Managed<KubernetesClusterDesired>, record: HostedRecord): HostedShape {
    const asked = minorOf(m.desired.version);
    const version = KUBERNETES_VERSIONS.indexOf(asked) >= KUBERNETES_VERSIONS.indexOf(minorOf(record.version)) ? asked : minorOf(record.version);
    return { version, etcd_members: record.etcd_members, storage_class: record.storage_class };
  }

  private refusalOf(m: Managed<KubernetesClusterDesired>, record: HostedRecord): string | null {
    if (etcdMembers(m.desired.ha) !== record.etcd_members)
      return `the kubernetes driver does not change the etcd members of a made cluster (it has ${record.etcd_members})`;
    if (this.shapeOf(m, record).version !== minorOf(m.desired.version))
      return `the kubernetes driver runs Kubernetes ${record.version} and does not move a cluster to an older version`;
    return null;
  }

  private newRecord(m: Managed<KubernetesClusterDesired>): HostedRecord {
    return { version: minorOf(m.desired.version), etcd_members: etcdMembers(m.desired.ha), storage_class: this.settings.storageClass, applied: null };
  }

  /** Whether the hosted API server answers /readyz, the minor /version says, and the pools' nodes. */
  private async ask(endpoint: string, pki: Pki): Promise<Answer> {
    const readyz = await this.request(endpoint, '/readyz', pki).catch((err: unknown) => ({ status: 0, body: messageOf(err) ?? String(err) }));
    if (readyz.status !== 200)
      return {
        ready: false,
        version: null,
        nodes: null,
        reason: readyz.status ? `its /readyz answered ${readyz.status}` : `it does not answer (${readyz.body})`,
      };
    const version = await this.request(endpoint, '/version', pki)
      .then(({ body }) => /^v(\d+\.\d+)\./.exec(String((JSON.parse(body) as { gitVersion?: unknown }).gitVersion))?.[1] ?? null)
      .catch(() => null);
    const nodes = await this.bounded(() => poolNodesOf(this.clientOf(endpoint, pki), Math.ceil(this.apiTimeoutMs / 1000))).catch(() => null);
    return { ready: true, version, nodes, reason: null };
  }

  /** A GET of the hosted API server as the operator (its client certificate), checked against the cluster's authority. */
  private request(endpoint: string, path: string, pki: Pki): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = https.get(
        `${endpoint}${path}`,
        { ca: pki[PKI_KEYS.caCert], cert: pki[PKI_KEYS.operatorCert], key: pki[PKI_KEYS.operatorKey], timeout: this.apiTimeoutMs },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk.slice(0, 65_536 - body.length)));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.apiTimeoutMs} ms`)));
    });
  }

  /** The operator's client of the hosted cluster. */
  private clientOf(endpoint: string, pki: Pki): KubeConfig {
    const kube = new KubeConfigClass();
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    kube.loadFromOptions({
      clusters: [{ name: 'hosted', server: endpoint, caData: b64(pki[PKI_KEYS.caCert]) }],
      users: [{ name: 'cloudplane-operator', certData: b64(pki[PKI_KEYS.operatorCert]), keyData: b64(pki[PKI_KEYS.operatorKey]) }],
      contexts: [{ name: 'hosted', cluster: 'hosted', user: 'cloudplane-operator' }],
      currentContext: 'hosted',
    });
    return kube;
  }

  /** `work`, or a failure once a few calls' time has passed (a hosted API server that hangs holds no worker). */
  private bounded<T>(work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        reject(new Error('the hosted API server did not answer in time'));
      }, this.apiTimeoutMs * 6);
    });
    return Promise.race([work(), limit]).finally(() => {
      clearTimeout(timer);
    });
  }

  /** etcd's claims made for the cluster (one per member that ever was, at most three). */
  private async claimsOf(m: Managed<KubernetesClusterDesired>, placement: Placement): Promise<V1PersistentVolumeClaim[]> {
    const claims: V1PersistentVolumeClaim[] = [];
    for (let n = 0; n < etcdMembers(true); n++) {
      const header: ObjectHeader = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { namespace: placement.namespace, name: `data-${etcdName(placement)}-${n}` },
      };
      const claim = await this.objects.read<V1PersistentVolumeClaim>(header);
      if (claim && madeFor(claim.metadata, m.id)) claims.push(claim);
    }
    return claims;
  }

  private async readLive(placement: Placement): Promise<Live> {
    const live: Partial<Live> = {};
    // One after another: each read's outcome counts into the health before the next.
    for (const { key, apiVersion, kind } of KINDS)
      live[key] = await this.objects.read({ apiVersion, kind, metadata: { namespace: placement.namespace, name: nameOf(placement, key) } });
    return live as Live;
  }

  private placementOf(m: Managed<KubernetesClusterDesired>): Placement {
    return placementOf(m, this.o.systemNamespace);
  }
}

/** Each object's name. */
function nameOf(placement: Placement, key: Key): string {
  switch (key) {
    case 'apiService':
      return placement.name;
    case 'etcd':
    case 'etcdService':
      return etcdName(placement);
    case 'apiserver':
    case 'kwok':
    case 'scheduler':
      return deploymentName(placement, key);
    case 'controllerManager':
      return deploymentName(placement, 'controller-manager');
    case 'kwokStages':
      return deploymentName(placement, 'kwok');
    case 'pki':
    case 'encryption':
      return secretName(placement, key);
    case 'connection':
      return secretName(placement, 'kubeconfig');
    case 'controllerManagerConfig':
      return secretName(placement, 'controller-manager');
    case 'schedulerConfig':
      return secretName(placement, 'scheduler');
    case 'kwokConfig':
      return secretName(placement, 'kwok');
  }
}

function recordOf(external: Managed<KubernetesClusterDesired>['external']): HostedRecord | null {
  return Value.Check(HostedRecord, external) ? external : null;
}

const componentSecrets = (live: Live) => ({
  'controller-manager': live.controllerManagerConfig,
  scheduler: live.schedulerConfig,
  kwok: live.kwokConfig,
});

/** The PKI the cluster's Secrets hold whole, or null. */
function keptPki(live: Live): Pki | null {
  return pkiOf(live.pki, componentSecrets(live));
}

/**
 * The PKI the PKI Secret holds, with a new identity for each component whose Secret is
 * gone; a new PKI altogether when there is none (a new cluster).
 */
async function completedPki(live: Live, placement: Placement, clusterIp: string): Promise<Pki> {
  const base = pkiBaseOf(live.pki);
  if (!base) return newPki(placement, clusterIp);
  const secrets = componentSecrets(live);
  const component = await componentIdentities(async (c) => componentIdentityOf(secrets[c]) ?? issueComponentIdentity(c, base[PKI_KEYS.caKey]));
  return { ...base, component };
}

/** What stands under the cluster's names without having been made for it, or null. */
function inTheWay(live: Live, id: string, placement: Placement): string | null {
  const foreign = KINDS.find(({ key }) => live[key] !== null && !madeFor(live[key].metadata, id));
  return foreign
    ? `a ${foreign.kind} ${placement.namespace}/${nameOf(placement, foreign.key)} that Cloudplane did not make for this cluster is in the way`
    : null;
}

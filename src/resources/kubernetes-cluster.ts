/**
 * Managed Kubernetes clusters: a control plane of a supported minor version and its node
 * pools. Field names follow DigitalOcean's Kubernetes API where the spec is silent
 * (docs/api.md, Kubernetes clusters). The node pools are a named part of the spec (one
 * truth: what the API's node-pool routes change is what a manifest holds); the token of
 * the kubeconfig is kept in a store secret, never in the resource, and only the
 * kubeconfig route shows it.
 */
import { Static, Type } from '@sinclair/typebox';
import { randomString } from '../lib/ids';
import type { FieldError } from '../lib/errors';
import { validationFailed } from '../lib/errors';
import { assertRegionAvailable } from './regions';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import { asStored, presentDetails } from './family';
import type { FamilyCommand } from './commands';
import {
  baseRecordProperties,
  reconcileRecord,
  reconcileRecordProperties,
  baseStatusProperties,
  connectionSecretProperty,
  ExternalRecordSchema,
  Region,
  ResourceName,
  StringEnum,
  strictObject,
  recordTimes,
} from './schema-kit';
import type { ExternalRecord } from './external-record';
import { REGIONAL_COLUMNS } from './presentation';

const STATES = ['creating', 'running', 'degraded', 'upgrading', 'failed', 'deleting', 'deleted', 'destroyed'] as const;
/** The minor versions a cluster may run, oldest first; none asked, the newest. */
export const KUBERNETES_VERSIONS = ['1.31', '1.32', '1.33', '1.34'] as const;
export const NEWEST_KUBERNETES_VERSION = KUBERNETES_VERSIONS[KUBERNETES_VERSIONS.length - 1];
/** Node plans, as DigitalOcean names its Droplet sizes: vCPUs and memory of each node. */
export const NODE_SIZES = ['s-1vcpu-2gb', 's-2vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb', 's-8vcpu-16gb'] as const;
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
/** States in which the cluster's API server answers: its kubeconfig is of use. */
export const SERVING_STATES: readonly string[] = ['running', 'degraded', 'upgrading'];
export const MAX_NODE_POOLS = 10;
export const MAX_NODES_PER_POOL = 100;
const MAX_LABELS = 64;
const MAX_TAINTS = 50;
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/**
 * A kubeconfig token in the form of a Kubernetes bootstrap token (`<6>.<16>`, lower-case
 * letters and digits): a cluster can take it as a kube-system Secret, and stop taking it by
 * deleting that Secret, with no restart of its API server.
 */
export const newClusterToken = () => `${randomString(6, TOKEN_ALPHABET)}.${randomString(16, TOKEN_ALPHABET)}`;

export type KubernetesVersion = (typeof KUBERNETES_VERSIONS)[number];
export type NodeSize = (typeof NODE_SIZES)[number];

export interface Taint {
  key: string;
  value: string;
  effect: (typeof TAINT_EFFECTS)[number];
}

export interface AutoScale {
  min_nodes: number;
  max_nodes: number;
}

export interface NodePoolSpec {
  name: string;
  size: NodeSize;
  count: number;
  labels: Record<string, string>;
  taints: Taint[];
  /** Absent: the pool keeps `count` nodes. */
  auto_scale?: AutoScale;
}

export interface KubernetesClusterSpec {
  name: string;
  region: string;
  /** The minor asked for; absent for the newest (absent, not null: a CRD's enum takes no null). */
  version?: string;
  node_pools: NodePoolSpec[];
  ha: boolean;
  /** Bumped by kubeconfig/rotate: the driver serves the new token (FamilyDefinition.secret). */
  token_version: number;
  writeConnectionSecretToRef?: { name: string };
}

/** A pool as the driver last saw it. */
export interface ObservedNodePool {
  name: string;
  ready_nodes: number;
}

export interface KubernetesClusterStatus extends BaseStatus {
  /** The API server's https URL, once it answers. */
  endpoint: string | null;
  /** The PEM certificate of the authority that signed the API server's serving certificate; null where the driver has none (simulated). */
  certificate_authority?: string | null;
  /** The minor that runs. */
  version: string | null;
  node_pools: ObservedNodePool[];
  external?: ExternalRecord;
}
export type KubernetesCluster = Resource<KubernetesClusterSpec, KubernetesClusterStatus>;

/** A DNS label (RFC 1123), as Kubernetes names a node pool's nodes after it. */
const PoolName = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  description: 'The pool\'s name: a DNS label (lower-case letters, digits and "-", 1-63), unique in the cluster.',
});
/** A label or taint key: an optional DNS subdomain prefix and `/`, then a name of 1-63 characters. */
const KEY_PATTERN = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
const VALUE_PATTERN = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';
const LabelValue = Type.String({ maxLength: 63, pattern: VALUE_PATTERN, description: 'A label value: at most 63 letters, digits, "-", "_" or ".".' });
const Labels = Type.Record(Type.String({ maxLength: 316, pattern: KEY_PATTERN }), LabelValue, {
  maxProperties: MAX_LABELS,
  additionalProperties: false,
  description: `Kubernetes labels of the pool's nodes, at most ${MAX_LABELS}: keys as Kubernetes takes them (an optional prefix/ and a name).`,
});
const TaintSchema = strictObject(
  {
    key: Type.String({ minLength: 1, maxLength: 316, pattern: KEY_PATTERN, description: 'The taint key, as a label key.' }),
    value: Type.String({ maxLength: 63, pattern: VALUE_PATTERN, description: 'The taint value, as a label value; may be empty.' }),
    effect: StringEnum(TAINT_EFFECTS, { description: 'NoSchedule, PreferNoSchedule or NoExecute.' }),
  },
  'A taint of every node of the pool.',
);
const Taints = Type.Array(TaintSchema, { maxItems: MAX_TAINTS, description: `Taints of the pool's nodes, at most ${MAX_TAINTS}.` });
const Size = StringEnum(NODE_SIZES, { description: "Each node's plan: vCPUs and memory (s-1vcpu-2gb ... s-8vcpu-16gb)." });
const Count = Type.Integer({ minimum: 1, maximum: MAX_NODES_PER_POOL, description: `Nodes in the pool, 1-${MAX_NODES_PER_POOL}.` });
const NodeCount = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_NODES_PER_POOL, description });
const AutoScaleSchema = strictObject(
  {
    min_nodes: NodeCount('The fewest nodes the autoscaler leaves; at most count.'),
    max_nodes: NodeCount('The most nodes the autoscaler makes; at least count.'),
  },
  'Autoscaling bounds: min_nodes <= count <= max_nodes. Absent (or null in an update): the pool keeps count nodes.',
);
const Version = Type.String({ enum: [...KUBERNETES_VERSIONS], description: `Kubernetes minor version (${KUBERNETES_VERSIONS.join(', ')}).` });
const Ha = Type.Boolean({ description: 'A highly available control plane (three API servers). Default false.' });

/** A node pool of a create body or of POST /node-pools. */
export const NodePoolCreate = strictObject(
  {
    name: PoolName,
    size: Size,
    count: Count,
    labels: Type.Optional(Labels),
    taints: Type.Optional(Taints),
    auto_scale: Type.Optional(AutoScaleSchema),
  },
  'A node pool: nodes of one size, with their labels and taints.',
);
export type NodePoolCreateBody = Static<typeof NodePoolCreate>;

/** PATCH /node-pools/{pool_name}: what of a pool can change (its name and size cannot). */
export const NodePoolUpdate = strictObject({
  count: Type.Optional(Count),
  labels: Type.Optional(Labels),
  taints: Type.Optional(Taints),
  auto_scale: Type.Optional(Type.Union([AutoScaleSchema, Type.Null()], { description: 'New autoscaling bounds; null stops autoscaling.' })),
});
export type NodePoolUpdateBody = Static<typeof NodePoolUpdate>;

const NodePools = (items: typeof NodePoolCreate | typeof NodePoolSpecSchema) =>
  Type.Array(items, {
    minItems: 1,
    maxItems: MAX_NODE_POOLS,
    description: `The node pools, 1-${MAX_NODE_POOLS}, each named uniquely.`,
    // Kept by name by server-side apply, and the API server refuses two of one name.
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  });

const NodePoolSpecSchema = strictObject({
  name: PoolName,
  size: Size,
  count: Count,
  labels: Labels,
  taints: Taints,
  auto_scale: Type.Optional(AutoScaleSchema),
});

/** A node pool as the API shows it: its spec and how many of its nodes are ready. */
export const NodePoolRecord = strictObject(
  {
    name: PoolName,
    size: Size,
    count: Count,
    labels: Labels,
    taints: Taints,
    auto_scale: Type.Union([AutoScaleSchema, Type.Null()], { description: 'Autoscaling bounds; null when the pool keeps count nodes.' }),
    ready_nodes: Type.Integer({ minimum: 0, description: 'Nodes of the pool that are ready, as last observed; count once the cluster settled.' }),
  },
  'A node pool of a cluster.',
);

const KubernetesClusterCreate = strictObject({
  name: ResourceName(),
  region: Region(),
  version: Type.Optional(Version),
  node_pools: NodePools(NodePoolCreate),
  ha: Type.Optional(Ha),
});

/** A create body's pool as the spec keeps it: no label or taint is an empty map or list. */
export const nodePoolOf = (pool: NodePoolCreateBody): NodePoolSpec => ({
  name: pool.name,
  size: pool.size,
  count: pool.count,
  labels: pool.labels ?? {},
  taints: pool.taints ?? [],
  ...(pool.auto_scale ? { auto_scale: pool.auto_scale } : {}),
});

/**
 * What the schema cannot say of a cluster's pools: names unique in the cluster, and a
 * count within its autoscaling bounds. Each problem names the field (`node_pools[1].count`).
 */
export function nodePoolProblems(pools: readonly NodePoolSpec[], field = (i: number) => `node_pools[${i}]`): FieldError[] {
  const problems: FieldError[] = [];
  const seen = new Set<string>();
  pools.forEach((pool, i) => {
    if (seen.has(pool.name)) problems.push({ field: `${field(i)}.name`, message: `is the name of another node pool of the cluster (${pool.name})` });
    seen.add(pool.name);
    const scale = pool.auto_scale;
    if (!scale) return;
    if (scale.min_nodes > scale.max_nodes) problems.push({ field: `${field(i)}.auto_scale`, message: 'min_nodes must not be above max_nodes' });
    else if (pool.count < scale.min_nodes || pool.count > scale.max_nodes)
      problems.push({ field: `${field(i)}.count`, message: `must be within auto_scale: ${scale.min_nodes} <= count <= ${scale.max_nodes}` });
  });
  return problems;
}

export function assertNodePools(pools: readonly NodePoolSpec[], field?: (i: number) => string): void {
  const problems = nodePoolProblems(pools, field);
  if (problems.length > 0) throw validationFailed(problems);
}

/** The version a cluster runs, or will run once made: the one recorded, else the one asked for, else the newest. */
export const runningVersionOf = ({ spec, status }: KubernetesCluster): string => asStored(status).version ?? spec.version ?? NEWEST_KUBERNETES_VERSION;

/** Whether `version` is a supported minor newer than `than`. */
export const isNewerVersion = (version: string, than: string): boolean =>
  KUBERNETES_VERSIONS.findIndex((v) => v === version) > KUBERNETES_VERSIONS.findIndex((v) => v === than);

/** A pool as the API shows it, with what was last observed of it. */
export function nodePoolRecord(pool: NodePoolSpec, observed: readonly ObservedNodePool[]): Static<typeof NodePoolRecord> {
  return {
    name: pool.name,
    size: pool.size,
    count: pool.count,
    labels: pool.labels,
    taints: pool.taints,
    auto_scale: pool.auto_scale ?? null,
    ready_nodes: observed.find((o) => o.name === pool.name)?.ready_nodes ?? 0,
  };
}

const POOL_COLUMNS = ['name', 'size', 'count', 'ready_nodes', 'auto_scale'];

/**
 * The kubeconfig (a YAML document, not an envelope), its token's rotation, the upgrade and
 * the node pools, served by api/routes/kubernetes-clusters.ts.
 */
const KUBERNETES_CLUSTER_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['kubeconfig'],
    summary: 'Print the kubeconfig (YAML), or write it to a file with --output-file',
    method: 'GET',
    path: '/{id}/kubeconfig',
    document: { mediaType: 'application/yaml', fileFlag: 'output-file' },
  },
  {
    words: ['rotate-kubeconfig'],
    summary: "Rotate the kubeconfig's token (the old one stops working)",
    method: 'POST',
    path: '/{id}/kubeconfig/rotate',
    versioned: true,
    waitFor: ['running'],
  },
  {
    words: ['upgrade'],
    summary: 'Upgrade to a newer Kubernetes version',
    method: 'POST',
    path: '/{id}/upgrade',
    versioned: true,
    dryRun: true,
    body: Type.Object({ version: Version }),
    waitFor: ['running'],
  },
  {
    words: ['node-pools', 'list'],
    summary: 'List the node pools of a cluster',
    method: 'GET',
    path: '/{id}/node-pools',
    versioned: true,
    columns: POOL_COLUMNS,
  },
  { words: ['node-pools', 'get'], summary: 'Get a node pool', method: 'GET', path: '/{id}/node-pools/{pool_name}', versioned: true, columns: POOL_COLUMNS },
  {
    words: ['node-pools', 'create'],
    summary: 'Add a node pool',
    method: 'POST',
    path: '/{id}/node-pools',
    versioned: true,
    dryRun: true,
    body: NodePoolCreate,
    columns: POOL_COLUMNS,
  },
  {
    words: ['node-pools', 'update'],
    summary: "Change a node pool's count, labels, taints or autoscaling",
    method: 'PATCH',
    path: '/{id}/node-pools/{pool_name}',
    versioned: true,
    dryRun: true,
    body: NodePoolUpdate,
    columns: POOL_COLUMNS,
  },
  {
    words: ['node-pools', 'delete'],
    summary: 'Delete a node pool (not the last one)',
    method: 'DELETE',
    path: '/{id}/node-pools/{pool_name}',
    versioned: true,
    dryRun: true,
    columns: [],
  },
];

export const kubernetesClusterFamily: FamilyDefinition<KubernetesClusterSpec, KubernetesClusterStatus> = {
  name: 'kubernetes_cluster',
  quota: { default: 100 },
  title: 'Kubernetes cluster',
  kind: 'KubernetesCluster',
  plural: 'kubernetesclusters',
  shortNames: ['cpk8s'],
  path: 'kubernetes-clusters',
  idPrefix: 'k8s',
  states: STATES,
  busyStates: ['upgrading', 'deleting'],
  reconcilingStates: ['upgrading'],
  readyStates: ['running'],
  providerBacked: true,
  deletion: 'background',
  creationEvent: 'created',
  eventVerbs: {
    updated: 'had a new configuration applied (a node pool changed, an upgrade, its kubeconfig rotated, or an edit of its custom resource).',
    kubeconfig_read: 'had its kubeconfig read (GET /kubernetes-clusters/{id}/kubeconfig); the actor is who read it. The data is the cluster, never the token.',
  },
  uniqueNames: true,
  description: 'A managed Kubernetes cluster: a control plane and its node pools.',
  secret: {
    field: 'token',
    secretName: (id) => `k8s-token-${id}`,
    generate: newClusterToken,
    versionField: 'token_version' satisfies keyof KubernetesClusterSpec,
  },
  schemas: {
    create: KubernetesClusterCreate,
    spec: strictObject({
      name: ResourceName(),
      region: Region(),
      version: Type.Optional(Version),
      node_pools: NodePools(NodePoolSpecSchema),
      ha: Ha,
      token_version: Type.Integer({ minimum: 0, description: 'Kubeconfig token rotations asked for; kubeconfig/rotate increments it.' }),
      ...connectionSecretProperty(),
    }),
    status: strictObject({
      ...baseStatusProperties(STATES),
      endpoint: Type.Union([Type.String(), Type.Null()], { description: "The API server's https URL." }),
      certificate_authority: Type.Optional(
        Type.Union([Type.String(), Type.Null()], { description: "The PEM certificate of the authority that signed the API server's serving certificate." }),
      ),
      version: Type.Union([Type.String(), Type.Null()], { description: 'The minor version that runs.' }),
      node_pools: Type.Array(strictObject({ name: Type.String(), ready_nodes: Type.Integer({ minimum: 0 }) }), {
        description: 'Ready nodes of each pool, as last observed.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
      external: ExternalRecordSchema,
    }),
    record: strictObject({
      ...baseRecordProperties('k8s', STATES),
      ...reconcileRecordProperties(),
      name: ResourceName(),
      region: Region(),
      version: Type.Union([Type.String(), Type.Null()], {
        description: 'The minor version: the one that runs, else the one asked for; null until known.',
      }),
      ha: Ha,
      endpoint: Type.Union([Type.String(), Type.Null()], { description: "The API server's https URL; null until the cluster runs." }),
      node_pools: Type.Array(NodePoolRecord),
    }),
  },
  specFromCreate(body: Static<typeof KubernetesClusterCreate> & { token_version?: number }, { config }) {
    assertRegionAvailable(config, body.region);
    const pools = body.node_pools.map(nodePoolOf);
    assertNodePools(pools);
    return {
      name: body.name,
      region: body.region,
      ...(body.version ? { version: body.version } : {}),
      node_pools: pools,
      ha: body.ha ?? false,
      token_version: body.token_version ?? 0,
    };
  },
  initialStatus: () => ({ endpoint: null, version: null, node_pools: [] }),
  nameOf: (spec) => spec.name,
  commands: KUBERNETES_CLUSTER_COMMANDS,
  // The endpoint only: the token is the team's credential, never published by the operator.
  connectionDetails: ({ status }) => (status.endpoint ? presentDetails({ endpoint: status.endpoint, version: status.version }) : null),
  toRecord: ({ meta, spec, status }) => {
    const observed = asStored(status).node_pools ?? [];
    return {
      id: meta.id,
      name: spec.name,
      status: status.status,
      status_reason: status.status_reason ?? null,
      ...reconcileRecord(status),
      region: spec.region,
      version: asStored(status).version ?? spec.version ?? null,
      ha: spec.ha,
      endpoint: asStored(status).endpoint ?? null,
      node_pools: spec.node_pools.map((pool) => nodePoolRecord(pool, observed)),
      ...recordTimes(meta, status),
    };
  },
  presentation: {
    columns: [...REGIONAL_COLUMNS, { key: 'version', label: 'Version', secondary: true }, { key: 'endpoint', label: 'Endpoint', secondary: true }],
  },
};

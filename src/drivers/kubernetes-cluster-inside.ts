/**
 * What the Kubernetes cluster drivers that run a real control plane (the local driver's
 * processes, the kubernetes driver's Pods) do inside a cluster through its API server,
 * the same for both:
 * - the kubeconfig's token is a bootstrap token (`<id>.<secret>`): a kube-system Secret the
 *   API server reads, its group bound to cluster-admin, so a rotation makes the new Secret
 *   and deletes the old one, and the old token stops at once, with no restart;
 * - the node pools' nodes are KWOK's (`<pool>-<n>`, annotated for KWOK, labelled
 *   `cloudplane.dev/node-pool` and with the pool's labels and taints), registered and
 *   removed by the driver as a pool's count changes;
 * - Secrets are encrypted in etcd (aesgcm) by the encryption configuration written here.
 */
import { CoreV1Api, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { Type, type Static } from '@sinclair/typebox';
import type { NodePoolSpec, ObservedNodePool } from '../resources/kubernetes-cluster';
import type { KubernetesClusterDesired } from './kubernetes-cluster';
import { sameJson } from '../lib/canonical-json';
import { codeOf } from '../lib/unknown-values';

export const POOL_LABEL = 'cloudplane.dev/node-pool';
/** The annotation by which KWOK knows the nodes it plays. */
export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';
/** The group of the kubeconfig's bootstrap token, bound to cluster-admin. */
export const ADMIN_GROUP = 'system:bootstrappers:cloudplane-admin';
const TOKEN_LABEL = 'cloudplane.dev/kubeconfig';
const ADMIN_BINDING = 'cloudplane:kubeconfig-admin';

/** What each plan gives a node, as a kubelet would report it. */
const ALLOCATABLE: Record<NodePoolSpec['size'], { cpu: string; memory: string }> = {
  's-1vcpu-2gb': { cpu: '1', memory: '2Gi' },
  's-2vcpu-2gb': { cpu: '2', memory: '2Gi' },
  's-2vcpu-4gb': { cpu: '2', memory: '4Gi' },
  's-4vcpu-8gb': { cpu: '4', memory: '8Gi' },
  's-8vcpu-16gb': { cpu: '8', memory: '16Gi' },
};

/** What a finished step applied inside the cluster: the token's version and the pools' shapes. */
export const Applied = Type.Object({
  token_version: Type.Integer(),
  pools: Type.Array(
    Type.Object({
      name: Type.String(),
      size: Type.String(),
      count: Type.Integer(),
      labels: Type.Record(Type.String(), Type.String()),
      taints: Type.Array(Type.Object({ key: Type.String(), value: Type.String(), effect: Type.String() })),
    }),
  ),
});
export type Applied = Static<typeof Applied>;
const poolShape = ({ name, size, count, labels, taints }: NodePoolSpec) => ({ name, size, count, labels, taints });
export const appliedOf = (desired: KubernetesClusterDesired): Applied => ({ token_version: desired.token_version, pools: desired.node_pools.map(poolShape) });

/** The kubeconfig's token, checked to be of a bootstrap token's form; throws when it cannot serve. */
export function tokenOf(desired: KubernetesClusterDesired): string {
  if (desired.token === null) throw new Error("the kubeconfig's token cannot be read yet");
  if (!/^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(desired.token)) throw new Error("the kubeconfig's token is not of the form a bootstrap token takes; rotate it");
  return desired.token;
}

/** kube-apiserver's --encryption-provider-config: Secrets sealed with `key` (32 bytes, base64), readable unsealed while older ones remain. */
export function encryptionConfigOf(key: string): string {
  return [
    'apiVersion: apiserver.config.k8s.io/v1',
    'kind: EncryptionConfiguration',
    'resources:',
    '  - resources: [secrets]',
    '    providers:',
    '      - aesgcm:',
    '          keys:',
    `            - name: key1`,
    `              secret: ${key}`,
    '      - identity: {}',
    '',
  ].join('\n');
}

/** The kubeconfig's token: its Secret in kube-system, and no other of the driver's; its group bound to cluster-admin. */
export async function applyToken(kube: KubeConfig, token: string): Promise<void> {
  const [id = '', secret = ''] = token.split('.');
  const core = kube.makeApiClient(CoreV1Api);
  const rbac = kube.makeApiClient(RbacAuthorizationV1Api);
  await ignoreConflict(
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name: ADMIN_BINDING },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: ADMIN_GROUP }],
      },
    }),
  );
  const name = `bootstrap-token-${id}`;
  const existing = await core.listNamespacedSecret({ namespace: 'kube-system', labelSelector: `${TOKEN_LABEL}=true` });
  for (const old of existing.items)
    if (old.metadata?.name !== name) await core.deleteNamespacedSecret({ namespace: 'kube-system', name: old.metadata?.name ?? '' });
  if (existing.items.some((s) => s.metadata?.name === name)) return;
  await core.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name, labels: { [TOKEN_LABEL]: 'true' } },
      type: 'bootstrap.kubernetes.io/token',
      stringData: { 'token-id': id, 'token-secret': secret, 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': ADMIN_GROUP },
    },
  });
}

/** Each pool's nodes (`<pool>-<n>`, KWOK's): made, removed, and given the pool's labels and taints. */
export async function applyNodes(kube: KubeConfig, pools: readonly NodePoolSpec[]): Promise<void> {
  const core = kube.makeApiClient(CoreV1Api);
  const present = (await core.listNode({ labelSelector: POOL_LABEL })).items;
  const wanted = new Map<string, V1Node>();
  for (const pool of pools) for (let n = 0; n < pool.count; n++) wanted.set(`${pool.name}-${n}`, nodeOf(`${pool.name}-${n}`, pool));
  for (const node of present) {
    const name = node.metadata?.name ?? '';
    const want = wanted.get(name);
    if (!want) await core.deleteNode({ name });
    else if (!sameJson(node.metadata?.labels, want.metadata?.labels) || !sameJson(poolTaints(node), want.spec?.taints ?? []))
      // A JSON patch: labels and taints replaced whole, so those the pool no longer has go too.
      await core.patchNode(
        {
          name,
          body: [
            { op: 'add', path: '/metadata/labels', value: want.metadata?.labels ?? {} },
            { op: 'add', path: '/spec/taints', value: want.spec?.taints ?? [] },
          ],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
  }
  const names = new Set(present.map((node) => node.metadata?.name));
  for (const [name, node] of wanted) if (!names.has(name)) await core.createNode({ body: node });
}

/** The pools' nodes as the cluster has them. */
export async function poolNodesOf(kube: KubeConfig, timeoutSeconds: number): Promise<V1Node[]> {
  return (await kube.makeApiClient(CoreV1Api).listNode({ labelSelector: POOL_LABEL, timeoutSeconds })).items;
}

/** Each pool's Ready nodes among `nodes`. */
export function readyNodesOf(pools: readonly NodePoolSpec[], nodes: readonly V1Node[]): ObservedNodePool[] {
  return pools.map((pool) => ({
    name: pool.name,
    ready_nodes: nodes.filter((node) => node.metadata?.labels?.[POOL_LABEL] === pool.name && isReady(node)).length,
  }));
}

function nodeOf(name: string, pool: NodePoolSpec): V1Node {
  const allocatable = { ...ALLOCATABLE[pool.size], pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_ANNOTATION]: 'fake' },
      labels: {
        ...pool.labels,
        [POOL_LABEL]: pool.name,
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
    },
    spec: { taints: pool.taints.map(({ key, value, effect }) => ({ key, ...(value ? { value } : {}), effect })) },
    status: { allocatable, capacity: allocatable },
  };
}

/** A node's taints but those Kubernetes itself puts on (`node.kubernetes.io/…`). */
const poolTaints = (node: V1Node) => (node.spec?.taints ?? []).filter((taint) => !taint.key.startsWith('node.kubernetes.io/'));

const isReady = (node: V1Node) => node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function ignoreConflict(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (codeOf(err) !== 409) throw err;
  }
}

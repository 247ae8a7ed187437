/**
 * Kubernetes cluster routes beyond CRUD: the kubeconfig (a YAML document with the token
 * from the store secret) and its token's rotation, the upgrade to a newer minor, and the
 * node pools as a named part of the cluster. Every change is a change of the spec (its
 * node_pools, version or token_version), which the reconciler carries out like a kubectl
 * edit of the custom resource.
 */
import { Type } from '@sinclair/typebox';
import YAML from 'yaml';
import type { FastifyRequest } from 'fastify';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import {
  assertChangeable,
  envelopeOf,
  ErrorEnvelope,
  findForChange,
  findResource,
  principalOf,
  rotateSecret,
  type SpecUpdate,
  VERSIONED_CHANGE,
} from './families';
import { tagAnswer } from '../entity-tags';
import {
  assertNodePools,
  isNewerVersion,
  MAX_NODE_POOLS,
  kubernetesClusterFamily as family,
  NodePoolCreate,
  nodePoolOf,
  NodePoolRecord,
  nodePoolRecord,
  NodePoolUpdate,
  runningVersionOf,
  SERVING_STATES,
  KUBERNETES_VERSIONS,
  type KubernetesCluster,
  type NodePoolSpec,
} from '../../resources/kubernetes-cluster';
import type { ApiApp } from '../api-app';
import { writeAndAwait } from '../awaiting';
import { ApiError, conflict, fieldInvalid, invalidState, notFound } from '../../lib/errors';
import { known } from '../../lib/known';
import { newId } from '../../lib/ids';
import { recordOf } from '../../resources/record-of';
import { DRY_RUN_META, DryRunQuery, isDryRun, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The cluster id (prefix k8s).' }) });
const PoolParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'The cluster id (prefix k8s).' }),
  pool_name: Type.String({ maxLength: 63, description: "The node pool's name." }),
});
const UpgradeBody = Type.Object(
  { version: Type.String({ enum: [...KUBERNETES_VERSIONS], description: 'The minor version to run: newer than the one that runs.' }) },
  { additionalProperties: false },
);
const YAML_TYPE = 'application/yaml';
const TEXT_TYPE = 'text/plain';

/**
 * The kubeconfig's media type: application/yaml, unless the client asks for plain text
 * alone (a generated client that reads text only: openapi-python-client takes no
 * application/yaml), which gets the same YAML as text/plain.
 */
function kubeconfigType(accept: string | undefined): string {
  const asked = (accept ?? '').split(',').map((part) => part.split(';')[0].trim().toLowerCase());
  const wantsText = asked.some((type) => type === TEXT_TYPE || type === 'text/*');
  const takesYaml = asked.some((type) => type === YAML_TYPE || type === 'application/*' || type === '*/*' || type === '');
  return wantsText && !takesYaml ? TEXT_TYPE : YAML_TYPE;
}
const errors = { 400: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, 415: ErrorEnvelope, 422: ErrorEnvelope };
/** A change of the cluster answers 412 too, when If-Match no longer holds. */
const changeErrors = { ...errors, ...VERSIONED_CHANGE.preconditionFailed };

/** The authority kubectl is to trust for the API server, where the driver made one (a local cluster's). */
const certificateAuthorityOf = (cluster: KubernetesCluster) => {
  const pem = cluster.status.certificate_authority;
  return pem ? { 'certificate-authority-data': Buffer.from(pem).toString('base64') } : {};
};

/** A kubeconfig of the cluster for its token, with one cluster, user and context, all named after the cluster's id. */
export function kubeconfigOf(cluster: KubernetesCluster, endpoint: string, token: string): string {
  const name = `cloudplane-${cluster.meta.id}`;
  const user = `${name}-admin`;
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: endpoint, ...certificateAuthorityOf(cluster) } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name, context: { cluster: name, user } }],
    'current-context': name,
    preferences: {},
  });
}

const poolOf = (cluster: KubernetesCluster, poolName: string): NodePoolSpec => {
  const pool = cluster.spec.node_pools.find((p) => p.name === poolName);
  if (!pool) throw notFound('node_pool', poolName);
  return pool;
};

export function registerKubernetesClusterRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${family.path}/:id`;
  const config = { family: family.name };
  const tags = [family.title];
  const tokenSecret = known(family.secret, 'the kubeconfig token secret of a Kubernetes cluster');
  const poolRecordOf = (cluster: KubernetesCluster, pool: NodePoolSpec) => nodePoolRecord(pool, cluster.status.node_pools);

  /** The cluster of the request, to change: changeable, and at the version If-Match names (if any). */
  const clusterToChange = async (request: FastifyRequest, id: string) => {
    const { found, ifMatch } = await findForChange<KubernetesCluster>(ctx, family, request, id);
    assertChangeable(family, found);
    return { cluster: found, ifMatch };
  };
  /**
   * Changes the cluster's node pools on its latest version, checked again as a whole; with
   * dry_run, judges the change on the version found and writes nothing.
   */
  const changePools = async (request: FastifyRequest, id: string, change: (cluster: KubernetesCluster) => NodePoolSpec[]) => {
    const { team, key } = principalOf(request);
    const { cluster: found, ifMatch } = await clusterToChange(request, id);
    const changeSpec = (current: KubernetesCluster) => {
      assertChangeable(family, current);
      const pools = change(current);
      assertNodePools(pools);
      return { ...current.spec, node_pools: pools };
    };
    if (isDryRun(request)) return previewSpecChange(found, changeSpec);
    return ctx.writer.mutateSpec<KubernetesCluster>(family, team, id, changeSpec, key, ifMatch);
  };
  /** An answer's meta: marked when it shows a dry run. */
  const metaOf = (request: FastifyRequest) => (isDryRun(request) ? DRY_RUN_META : undefined);

  app.get(`${base}/kubeconfig`, {
    config: { ...config, carriesSecret: true },
    schema: {
      tags,
      operationId: 'getKubernetesClusterKubeconfig',
      summary: 'Get the kubeconfig of a cluster',
      description:
        'The kubeconfig as YAML (application/yaml, not an envelope; text/plain to a client that asks for that alone): the API server `endpoint` and a bearer token, which is kept in a store secret and shown by this call only. Once the cluster serves (running, degraded or upgrading); before, and once deleted, 409 invalid_state.',
      params: IdParams,
      response: {
        200: {
          description: 'The kubeconfig.',
          content: {
            [YAML_TYPE]: { schema: Type.String({ description: 'A kubeconfig (apiVersion v1, kind Config).' }) },
            [TEXT_TYPE]: { schema: Type.String({ description: 'The same YAML, to a client that asks for text/plain alone.' }) },
          },
        },
        404: ErrorEnvelope,
        409: ErrorEnvelope,
      },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const cluster = await findResource<KubernetesCluster>(ctx, family, team, id);
      const { endpoint } = cluster.status;
      if (cluster.meta.deletionTimestamp || !SERVING_STATES.includes(cluster.status.status) || !endpoint)
        throw invalidState(`The Kubernetes cluster is ${cluster.status.status}; its kubeconfig is there once it is running.`);
      const secret = await ctx.store.secrets.get(team, tokenSecret.secretName(id));
      if (!secret) throw invalidState('The Kubernetes cluster has no token yet; rotate its kubeconfig to make one.');
      // Audited before it is served: a read the bus cannot record is refused, not served unseen.
      await ctx.bus
        .publish({
          id: newId('evt'),
          type: `${family.name}.kubeconfig_read`,
          created_at: new Date().toISOString(),
          team_id: team,
          actor: key,
          data: recordOf(family, cluster),
        })
        .catch((err: unknown) => {
          request.log.warn({ err, cluster: id }, 'kubeconfig read not served: its audit event could not be published');
          throw new ApiError(503, 'persistence_unavailable', 'The read cannot be recorded in the audit log now, so the kubeconfig is not served. Retry later.');
        });
      return reply
        .code(200)
        .type(kubeconfigType(request.headers.accept))
        .send(kubeconfigOf(cluster, endpoint, secret.value));
    },
  });

  app.post(`${base}/kubeconfig/rotate`, {
    config,
    schema: {
      tags,
      operationId: 'rotateKubernetesClusterKubeconfig',
      summary: "Rotate the kubeconfig's token",
      description:
        'Makes a new token; the driver serves it (`kubernetes_cluster.updated`) and the old one stops working. The answer is the cluster, without the token: GET the kubeconfig again. While upgrading 409 resource_busy; a deleted cluster 409 invalid_state.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      response: { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team, key } = principalOf(request);
      const { cluster, ifMatch } = await clusterToChange(request, id);
      const token = known(tokenSecret.generate?.(cluster.spec), "a new kubeconfig token (the family's secret generates one)");
      const update: SpecUpdate<KubernetesCluster> = (extra = () => ({})) =>
        ctx.writer.mutateSpec<KubernetesCluster>(
          family,
          team,
          id,
          (current) => {
            assertChangeable(family, current);
            return { ...current.spec, ...extra(current) };
          },
          key,
          ifMatch,
        );
      const updated = await rotateSecret(ctx, family, team, id, token, update);
      tagAnswer(reply, updated);
      return send(ctx, request, reply, 200, recordOf(family, updated));
    },
  });

  app.post(`${base}/upgrade`, {
    config,
    schema: {
      tags,
      operationId: 'upgradeKubernetesCluster',
      summary: 'Upgrade a cluster to a newer Kubernetes version',
      description:
        'Asks for `version`, which must be newer than the one that runs (422 validation_failed naming `version` otherwise). The cluster is `upgrading` until it runs the new version, then `running` again. Only a running or degraded cluster: 409 resource_busy while upgrading, 409 invalid_state while creating, failed or deleted.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      body: UpgradeBody,
      response: { 200: envelopeOf(family.schemas.record), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { version } = request.body;
      const { team, key } = principalOf(request);
      const check = (cluster: KubernetesCluster) => {
        assertChangeable(family, cluster);
        if (!['running', 'degraded'].includes(cluster.status.status))
          throw invalidState(`The Kubernetes cluster is ${cluster.status.status}; only a running or degraded cluster can be upgraded.`);
        const running = runningVersionOf(cluster);
        if (!isNewerVersion(version, running)) throw fieldInvalid('version', `must be newer than the version that runs (${running})`);
      };
      const { found, ifMatch } = await findForChange<KubernetesCluster>(ctx, family, request, id);
      check(found);
      const change = (current: KubernetesCluster) => {
        check(current);
        return { ...current.spec, version };
      };
      // The state the request leads to, shown should the reconciler not have written it yet.
      const ledTo = (cluster: KubernetesCluster) =>
        cluster.status.status === 'running' ? { ...cluster, status: { ...cluster.status, status: 'upgrading' } } : cluster;
      if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, family, ledTo(previewSpecChange(found, change)));
      const ask = () => ctx.writer.mutateSpec<KubernetesCluster>(family, team, id, change, key, ifMatch);
      const moved = await writeAndAwait<KubernetesCluster>(
        ctx.store,
        family.kind,
        team,
        id,
        ask,
        (c) => c.status.status !== 'running' || c.status.version === version,
      );
      // The reconciler did not answer in time (another replica leads): the state the request leads to.
      const current = moved ?? (await findResource<KubernetesCluster>(ctx, family, team, id));
      tagAnswer(reply, current);
      const shown = moved ?? ledTo(current);
      return send(ctx, request, reply, 200, recordOf(family, shown));
    },
  });

  app.get(`${base}/node-pools`, {
    config,
    schema: {
      tags,
      operationId: 'listKubernetesClusterNodePools',
      summary: 'List the node pools of a cluster',
      description: 'Every pool of the cluster, in the order of its spec, with its ready nodes; not paged (a cluster has at most 10).',
      params: IdParams,
      response: { 200: envelopeOf(Type.Array(NodePoolRecord)), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const cluster = await findResource<KubernetesCluster>(ctx, family, principalOf(request).team, id);
      tagAnswer(reply, cluster);
      return send(
        ctx,
        request,
        reply,
        200,
        cluster.spec.node_pools.map((pool) => poolRecordOf(cluster, pool)),
      );
    },
  });

  app.post(`${base}/node-pools`, {
    config,
    schema: {
      tags,
      operationId: 'createKubernetesClusterNodePool',
      summary: 'Add a node pool to a cluster',
      description:
        'Adds the pool to the spec; the driver makes its nodes (`kubernetes_cluster.updated`; `ready_nodes` grows to `count`). A name the cluster has: 409 name_taken; an eleventh pool, or a count outside auto_scale: 422 validation_failed.',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      body: NodePoolCreate,
      response: { 201: envelopeOf(NodePoolRecord), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const pool = nodePoolOf(request.body);
      const updated = await changePools(request, id, (cluster) => {
        if (cluster.spec.node_pools.some((p) => p.name === pool.name)) throw conflict('name_taken', `The cluster already has a node pool named ${pool.name}.`);
        if (cluster.spec.node_pools.length >= MAX_NODE_POOLS) throw fieldInvalid('node_pools', `a cluster has at most ${MAX_NODE_POOLS} node pools`);
        return [...cluster.spec.node_pools, pool];
      });
      if (!isDryRun(request)) {
        reply.header('Location', `/api/v1/${family.path}/${id}/node-pools/${encodeURIComponent(pool.name)}`);
        tagAnswer(reply, updated);
      }
      return send(ctx, request, reply, 201, poolRecordOf(updated, poolOf(updated, pool.name)), metaOf(request));
    },
  });

  app.get(`${base}/node-pools/:pool_name`, {
    config,
    schema: {
      tags,
      operationId: 'getKubernetesClusterNodePool',
      summary: 'Get a node pool of a cluster',
      description: 'A pool the cluster does not have: 404 node_pool_not_found.',
      params: PoolParams,
      response: { 200: envelopeOf(NodePoolRecord), 404: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id, pool_name: poolName } = request.params;
      const cluster = await findResource<KubernetesCluster>(ctx, family, principalOf(request).team, id);
      tagAnswer(reply, cluster);
      return send(ctx, request, reply, 200, poolRecordOf(cluster, poolOf(cluster, poolName)));
    },
  });

  app.patch(`${base}/node-pools/:pool_name`, {
    config,
    schema: {
      tags,
      operationId: 'updateKubernetesClusterNodePool',
      summary: 'Update a node pool of a cluster',
      description:
        "Changes the pool's `count`, `labels`, `taints` (each replaced as a whole) or `auto_scale` (null stops autoscaling); its name and size stay. A count outside the pool's auto_scale: 422 validation_failed naming it.",
      params: PoolParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      body: NodePoolUpdate,
      response: { 200: envelopeOf(NodePoolRecord), ...changeErrors },
    },
    handler: async (request, reply) => {
      const { id, pool_name: poolName } = request.params;
      const { auto_scale: autoScale, ...patch } = request.body;
      const updated = await changePools(request, id, (current) => {
        poolOf(current, poolName);
        return current.spec.node_pools.map((pool) => {
          if (pool.name !== poolName) return pool;
          const { auto_scale: kept, ...rest } = { ...pool, ...patch };
          const scale = autoScale === undefined ? kept : (autoScale ?? undefined);
          return { ...rest, ...(scale ? { auto_scale: scale } : {}) };
        });
      });
      if (!isDryRun(request)) tagAnswer(reply, updated);
      return send(ctx, request, reply, 200, poolRecordOf(updated, poolOf(updated, poolName)), metaOf(request));
    },
  });

  app.delete(`${base}/node-pools/:pool_name`, {
    config,
    schema: {
      tags,
      operationId: 'deleteKubernetesClusterNodePool',
      summary: 'Delete a node pool of a cluster',
      description:
        'Takes the pool out of the spec; the driver removes its nodes (`kubernetes_cluster.updated`). Answers 204. The last pool of a cluster cannot be deleted (409 invalid_state): delete the cluster instead.',
      params: PoolParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      response: { 204: Type.Null(), 404: ErrorEnvelope, 409: ErrorEnvelope, ...VERSIONED_CHANGE.preconditionFailed },
    },
    handler: async (request, reply) => {
      const { id, pool_name: poolName } = request.params;
      const updated = await changePools(request, id, (current) => {
        poolOf(current, poolName);
        if (current.spec.node_pools.length === 1)
          throw invalidState(`Node pool ${poolName} is the cluster's last; a cluster keeps at least one. Delete the cluster instead.`);
        return current.spec.node_pools.filter((p) => p.name !== poolName);
      });
      if (!isDryRun(request)) tagAnswer(reply, updated);
      return reply.code(204).send(null);
    },
  });
}

/** Load balancer actions: attach and detach a server as a backend; the live traffic counters. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findForChange, findResource, principalOf, VERSIONED_CHANGE } from './families';
import { tagAnswer } from '../entity-tags';
import { loadBalancerFamily as family, LoadBalancer, loadBalancerStatsSchema } from '../../resources/load-balancer';
import { familyByName } from '../../resources/registry';
import { conflict, notFound, providerUnavailable } from '../../lib/errors';
import type { ApiApp } from '../api-app';
import { DataPlaneUnavailable, LoadBalancerDriver, LoadBalancerTraffic } from '../../drivers/load-balancer';
import { managedOf } from '../../controllers/driven';
import { loadBalancerDesired } from '../../controllers/load-balancer';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, isDryRun, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const AttachBody = Type.Object(
  {
    server_id: Type.String({ minLength: 1, maxLength: 64, description: 'The server to attach (prefix svr).' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Backend port; defaults to the frontend port.' })),
  },
  { additionalProperties: false },
);
const DetachBody = Type.Object(
  { server_id: Type.String({ minLength: 1, maxLength: 64, description: 'The attached server to detach.' }) },
  { additionalProperties: false },
);
const responses = {
  200: envelopeOf(family.schemas.record),
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  ...VERSIONED_CHANGE.preconditionFailed,
  422: ErrorEnvelope,
};

/** `driver`: the load balancers' driver in use, asked for the live traffic. */
export function registerLoadBalancerRoutes(app: ApiApp, ctx: ApiContext, driver: LoadBalancerDriver): void {
  const base = `/api/v1/${family.path}/:id`;
  const config = { family: family.name };
  const tags = [family.title];
  /** Writes the change of backends and answers the load balancer it leaves; with dry_run, judges it on `found` and writes nothing. */
  const answerSpecChange = async (
    request: FastifyRequest,
    reply: FastifyReply,
    found: LoadBalancer,
    change: (lb: LoadBalancer) => LoadBalancer['spec'],
    write: () => Promise<LoadBalancer>,
  ) => {
    if (isDryRun(request)) return sendDryRun(ctx, request, reply, family, previewSpecChange(found, change));
    const updated = await write();
    tagAnswer(reply, updated);
    return send(ctx, request, reply, 200, recordOf(family, updated));
  };

  app.post(`${base}/attach`, {
    config,
    schema: {
      tags,
      operationId: 'attachLoadBalancerBackend',
      summary: 'Attach a server as a backend',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      body: AttachBody,
      response: responses,
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { server_id, port } = request.body;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<LoadBalancer>(ctx, family, request, id);
      assertChangeable(family, found);
      const server = await ctx.store.get<unknown, { status: string }>(familyByName('server').kind, team, server_id);
      if (!server || ['deleted', 'destroyed'].includes(server.status.status)) throw notFound('server', server_id);
      const change = (lb: LoadBalancer) => {
        assertChangeable(family, lb);
        if (lb.spec.backends.some((b) => b.server_id === server_id)) {
          throw conflict('backend_already_attached', `Server ${server_id} is already a backend of ${id}.`);
        }
        return { ...lb.spec, backends: [...lb.spec.backends, { server_id, port: port ?? lb.spec.port }] };
      };
      return answerSpecChange(request, reply, found, change, () => ctx.writer.mutateSpec<LoadBalancer>(family, team, id, change, key, ifMatch));
    },
  });

  app.post(`${base}/detach`, {
    config,
    schema: {
      tags,
      operationId: 'detachLoadBalancerBackend',
      summary: 'Detach a backend server',
      params: IdParams,
      headers: VERSIONED_CHANGE.headers,
      querystring: DryRunQuery,
      body: DetachBody,
      response: responses,
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { server_id } = request.body;
      const { team, key } = principalOf(request);
      const { found, ifMatch } = await findForChange<LoadBalancer>(ctx, family, request, id);
      assertChangeable(family, found);
      const change = (lb: LoadBalancer) => {
        assertChangeable(family, lb);
        if (!lb.spec.backends.some((b) => b.server_id === server_id)) {
          throw notFound('backend', server_id);
        }
        return { ...lb.spec, backends: lb.spec.backends.filter((b) => b.server_id !== server_id) };
      };
      return answerSpecChange(request, reply, found, change, () => ctx.writer.mutateSpec<LoadBalancer>(family, team, id, change, key, ifMatch));
    },
  });

  app.get(`${base}/stats`, {
    config,
    schema: {
      tags,
      operationId: 'getLoadBalancerStats',
      summary: 'Live traffic counters',
      description:
        "Asks the load balancer's data plane for its counters now: the sessions and bytes through its frontend and to each backend, cumulative since its data-plane processes started, summed over them. A data plane that cannot be read answers 503 provider_unavailable.",
      params: IdParams,
      response: { 200: envelopeOf(loadBalancerStatsSchema), 404: ErrorEnvelope, 503: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const lb = await findResource<LoadBalancer>(ctx, family, principalOf(request).team, id);
      // The desired state the reconciler asks with: the backends by server id and port, as the data plane names them.
      const desired = await loadBalancerDesired(ctx.store, lb, ctx.config.backendDrainMs);
      let traffic: LoadBalancerTraffic;
      try {
        // traffic only reads: asking it from a request changes nothing the reconciler relies on.
        traffic = await driver.traffic(managedOf(family, lb, desired));
      } catch (err) {
        if (err instanceof DataPlaneUnavailable) throw providerUnavailable(family.title, err.message);
        throw err;
      }
      return send(ctx, request, reply, 200, traffic);
    },
  });
}

/** Load balancer actions: attach and detach a server as a backend. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { loadBalancerFamily as family, LoadBalancer } from '../../resources/load-balancer';
import { familyByName } from '../../resources/registry';
import { conflict, notFound } from '../../lib/errors';
import type { ApiApp } from '../api-app';

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
const responses = { 200: envelopeOf(family.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope };

export function registerLoadBalancerRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${family.path}/:id`;
  const config = { family: family.name };
  const tags = [family.title];

  app.post(`${base}/attach`, {
    config,
    schema: {
      tags,
      operationId: 'attachLoadBalancerBackend',
      summary: 'Attach a server as a backend',
      params: IdParams,
      body: AttachBody,
      response: responses,
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { server_id, port } = request.body;
      const { team, key } = principalOf(request);
      assertChangeable(family, await findResource(ctx, family, team, id));
      const server = await ctx.store.get<unknown, { status: string }>(familyByName('server').kind, team, server_id);
      if (!server || ['deleted', 'destroyed'].includes(server.status.status)) throw notFound('server', server_id);
      const updated = await ctx.writer.mutateSpec<LoadBalancer>(
        family,
        team,
        id,
        (lb) => {
          assertChangeable(family, lb);
          if (lb.spec.backends.some((b) => b.server_id === server_id)) {
            throw conflict('backend_already_attached', `Server ${server_id} is already a backend of ${id}.`);
          }
          return { ...lb.spec, backends: [...lb.spec.backends, { server_id, port: port ?? lb.spec.port }] };
        },
        key,
      );
      return send(ctx, request, reply, 200, family.toRecord(updated));
    },
  });

  app.post(`${base}/detach`, {
    config,
    schema: { tags, operationId: 'detachLoadBalancerBackend', summary: 'Detach a backend server', params: IdParams, body: DetachBody, response: responses },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { server_id } = request.body;
      const { team, key } = principalOf(request);
      assertChangeable(family, await findResource(ctx, family, team, id));
      const updated = await ctx.writer.mutateSpec<LoadBalancer>(
        family,
        team,
        id,
        (lb) => {
          assertChangeable(family, lb);
          if (!lb.spec.backends.some((b) => b.server_id === server_id)) {
            throw notFound('backend', server_id);
          }
          return { ...lb.spec, backends: lb.spec.backends.filter((b) => b.server_id !== server_id) };
        },
        key,
      );
      return send(ctx, request, reply, 200, family.toRecord(updated));
    },
  });
}

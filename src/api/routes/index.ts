/** Route modules beyond the generic CRUD: actions, settings, agent, regions. */
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context';
import { registerLoadBalancerRoutes } from './load-balancers';
import { registerRegionRoutes } from './regions';
import { registerAuditLogRoutes } from './audit-log';

export function registerRouteModules(app: FastifyInstance, ctx: ApiContext): void {
  registerRegionRoutes(app, ctx);
  registerLoadBalancerRoutes(app, ctx);
  registerAuditLogRoutes(app, ctx);
}

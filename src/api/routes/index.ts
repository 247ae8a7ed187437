/**
 * Route modules that belong to no family: regions, the event catalog, the audit log, the
 * console session, usage and the simulation API (when it is on). A family's routes are registered by its module (src/families/).
 */
import type { ApiContext } from '../context';
import { registerRegionRoutes } from './regions';
import { registerEventTypeRoutes } from './event-types';
import { registerAuditLogRoutes } from './audit-log';
import { registerSessionRoutes } from './session';
import { registerUsageRoutes } from './usage';
import { registerSimulationRoutes } from './simulation';
import type { ApiApp } from '../api-app';

export function registerRouteModules(app: ApiApp, ctx: ApiContext): void {
  registerRegionRoutes(app, ctx);
  registerEventTypeRoutes(app, ctx);
  registerAuditLogRoutes(app, ctx);
  registerSessionRoutes(app, ctx);
  registerUsageRoutes(app, ctx);
  if (ctx.faults) registerSimulationRoutes(app, ctx, ctx.faults);
}

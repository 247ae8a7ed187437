/** Route modules beyond the generic CRUD: actions, settings, agent, regions. */
import type { ApiContext } from '../context';
import { registerLoadBalancerRoutes } from './load-balancers';
import { registerRegionRoutes } from './regions';
import { registerEventTypeRoutes } from './event-types';
import { registerAuditLogRoutes } from './audit-log';
import { registerVpnGatewayRoutes } from './vpn-gateways';
import { registerServerRoutes } from './servers';
import { registerBackupRoutes } from './backups';
import { registerFileShareRoutes } from './file-shares';
import { registerJobRoutes } from './jobs';
import { registerSettingsRoutes } from './settings';
import { registerAgentRoutes } from './agent';
import { registerWebhookRoutes } from './webhooks';
import { registerWebhookListenerRoutes } from './webhook-listeners';
import { registerWebhookDeliveryRoutes } from './webhook-deliveries';
import { registerTeamRoutes } from './teams';
import { registerSessionRoutes } from './session';
import { registerUsageRoutes } from './usage';
import { registerIncidentRoutes } from './incidents';
import type { ApiApp } from '../api-app';

export function registerRouteModules(app: ApiApp, ctx: ApiContext): void {
  registerRegionRoutes(app, ctx);
  registerEventTypeRoutes(app, ctx);
  registerLoadBalancerRoutes(app, ctx);
  registerAuditLogRoutes(app, ctx);
  registerVpnGatewayRoutes(app, ctx);
  registerServerRoutes(app, ctx);
  registerBackupRoutes(app, ctx);
  registerFileShareRoutes(app, ctx);
  registerJobRoutes(app, ctx);
  registerSettingsRoutes(app, ctx);
  // After settings, so that GET /api/v1/settings/team names the Team schema (openapi-components.ts).
  registerTeamRoutes(app, ctx);
  registerAgentRoutes(app, ctx);
  registerWebhookRoutes(app, ctx);
  registerSessionRoutes(app, ctx);
  registerWebhookListenerRoutes(app, ctx);
  registerWebhookDeliveryRoutes(app, ctx);
  registerUsageRoutes(app, ctx);
  registerIncidentRoutes(app, ctx);
}

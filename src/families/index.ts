/**
 * Every family module of the service: the one list the drivers, the reconcilers and the
 * routes are derived from (build.ts). A family added here must also be defined in
 * src/resources/registry.ts, the list the lower layers read (the store's kinds, the CRDs,
 * the event catalog), which cannot import from here; start-up refuses a family in one
 * list and not the other, naming it.
 */
import { driverFamiliesOf, FamilyModule } from './module';
import { loadBalancerModule } from './load-balancer';
import { vpnGatewayModule } from './vpn-gateway';
import { serverModule } from './server';
import { bucketModule } from './bucket';
import { fileShareModule } from './file-share';
import { jobModule } from './job';
import { backupModule } from './backup';
import { accountsModule } from './accounts';
import { agentModule } from './agent';
import { webhookModule } from './webhook';
import { alertPolicyModule } from './alert-policy';
import { incidentModule } from './incident';
import { databaseModule } from './database';
import { kubernetesClusterModule } from './kubernetes-cluster';

export const FAMILY_MODULES: readonly FamilyModule[] = [
  loadBalancerModule,
  vpnGatewayModule,
  serverModule,
  bucketModule,
  fileShareModule,
  databaseModule,
  kubernetesClusterModule,
  jobModule,
  backupModule,
  accountsModule,
  agentModule,
  webhookModule,
  alertPolicyModule,
  incidentModule,
];

/** What CLOUDPLANE_DRIVER_<FAMILY> may name. */
export const DRIVER_FAMILIES: readonly string[] = driverFamiliesOf(FAMILY_MODULES);

/**
 * Every resource family's definition: the list the layers from here up read (the store's
 * kinds, the CRDs, the event catalog, the CLI). A family's drivers, reconcilers and routes
 * are joined in its module under src/families/, listed in src/families/index.ts; start-up
 * refuses a family in one list and not the other (docs/architecture.md, How a resource
 * family is made).
 */
import type { AnyFamily } from './family';
import { loadBalancerFamily } from './load-balancer';
import { vpnGatewayFamily } from './vpn-gateway';
import { serverFamily } from './server';
import { bucketFamily, fileShareFamily } from './storage';
import { jobFamily } from './job';
import { backupFamily } from './backup';
import { apiKeyFamily, teamFamily, userFamily } from './accounts';
import { messageFamily, threadFamily } from './agent';
import { deliveryFamily, webhookFamily } from './webhook';
import { alertPolicyFamily } from './alert';
import { incidentFamily } from './incident';
import { databaseFamily } from './database';
import { kubernetesClusterFamily } from './kubernetes-cluster';

export const families: AnyFamily[] = [
  loadBalancerFamily,
  vpnGatewayFamily,
  serverFamily,
  bucketFamily,
  fileShareFamily,
  databaseFamily,
  kubernetesClusterFamily,
  jobFamily,
  backupFamily,
  teamFamily,
  userFamily,
  apiKeyFamily,
  threadFamily,
  messageFamily,
  webhookFamily,
  deliveryFamily,
  alertPolicyFamily,
  incidentFamily,
];

export function familyByName(name: string): AnyFamily {
  const family = families.find((f) => f.name === name);
  if (!family) throw new Error(`unknown family ${name}`);
  return family;
}

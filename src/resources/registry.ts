/**
 * Every resource family of the service. Adding a family means adding its module here,
 * its reconciler in src/controllers/registry.ts, and routes for its actions, if any.
 */
import type { AnyFamily } from './family';
import { loadBalancerFamily } from './load-balancer';
import { apiKeyFamily, teamFamily, userFamily } from './accounts';

export const families: AnyFamily[] = [
  loadBalancerFamily,
  teamFamily,
  userFamily,
  apiKeyFamily,
];

export function familyByName(name: string): AnyFamily {
  const family = families.find((f) => f.name === name);
  if (!family) throw new Error(`unknown family ${name}`);
  return family;
}

/**
 * Names in the OpenAPI document as a person would write them, derived from a family's
 * title so that each is spelled in one place: 'load balancer' -> LoadBalancer, 'VPN
 * gateway' -> VpnGateway, 'API key' -> ApiKey (generated clients turn these into class
 * and method names, where an all-capitals word reads badly).
 */
export const typeNameOf = (title: string): string =>
  title
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0].toUpperCase() + word.slice(1).toLowerCase())
    .join('');

/** LoadBalancer -> LoadBalancers, for the operationId of a list. */
export { pluralOf } from '../lib/plural';

/**
 * The SSRF guard of webhook deliveries: https only, and no private, loopback or
 * link-local target, unless configuration allows them (tests and private installs do).
 * A name is resolved when a delivery is sent and the connection is pinned to the address
 * that was checked, so a DNS answer that changes in between cannot slip past.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPublicAddress } from '../lib/ip';

export interface TargetPolicy {
  allowHttp: boolean;
  allowPrivateTargets: boolean;
}

export class TargetRefused extends Error {}

/** Checks a URL's form; the reason when refused, else null. Used when a subscription is written. */
export function urlProblem(raw: string, policy: TargetPolicy): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) return 'must be an https URL';
  if (url.username || url.password) return 'must not contain credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowPrivateTargets && (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && !isPublicAddress(host)))) {
    return 'must not point at a private, loopback or link-local address';
  }
  return null;
}

/** Resolves the URL's host to the address a delivery connects to, refusing non-public ones. */
export async function resolveTarget(raw: string, policy: TargetPolicy): Promise<{ url: URL; address: string; family: 4 | 6 }> {
  const problem = urlProblem(raw, policy);
  if (problem) throw new TargetRefused(`the URL ${problem}`);
  const url = new URL(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  const resolved = literal ? { address: host, family: literal as 4 | 6 } : ((await lookup(host, { verbatim: true })) as { address: string; family: 4 | 6 });
  if (!policy.allowPrivateTargets && !isPublicAddress(resolved.address)) {
    throw new TargetRefused(`${host} resolves to ${resolved.address}, a private, loopback or link-local address`);
  }
  return { url, address: resolved.address, family: resolved.family };
}

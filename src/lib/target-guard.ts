/**
 * The SSRF guard of webhook deliveries (webhooks/sender.ts) and of the URLs subscriptions
 * are created with (resources/webhook.ts): https only, and no private, loopback or
 * link-local target, unless configuration allows them (tests and private installs do).
 * A name is resolved when a delivery is sent and the connection is pinned to the address
 * that was checked, so a DNS answer that changes in between cannot slip past.
 *
 * What a refusal says reaches the tenant (a delivery's `error`): it names no address, and
 * a name that resolves to a non-public address reads exactly like one that does not
 * resolve, so delivery errors cannot map a private network's names.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPublicAddress } from './ip';

export interface TargetPolicy {
  allowHttp: boolean;
  allowPrivateTargets: boolean;
}

export class TargetRefused extends Error {}

/** The one answer for "resolves only to a non-public address" and "does not resolve". */
export const NO_PUBLIC_ADDRESS = "the URL's host does not resolve to a public address";

export const HTTPS_ONLY = 'must be an https URL';
export const NOT_PRIVATE = 'must not point at a private, loopback or link-local address';

/** A host name without the root's trailing dot (`localhost.` is `localhost`). */
const withoutRootDot = (host: string) => host.replace(/\.$/, '');

/** Checks a URL's form; the reason when refused, else null. Used when a subscription is written. */
export function urlProblem(raw: string, policy: TargetPolicy): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) return HTTPS_ONLY;
  if (url.username || url.password) return 'must not contain credentials';
  const host = withoutRootDot(url.hostname.replace(/^\[|\]$/g, '')).toLowerCase();
  if (!policy.allowPrivateTargets && (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && !isPublicAddress(host)))) {
    return NOT_PRIVATE;
  }
  return null;
}

/**
 * Resolves the URL's host to the address a delivery connects to, refusing non-public ones.
 * A refusal's message is for the tenant; `detail` (the resolver's error, the address) is
 * for the operator's log only.
 */
export async function resolveTarget(raw: string, policy: TargetPolicy): Promise<{ url: URL; address: string; family: 4 | 6 }> {
  const problem = urlProblem(raw, policy);
  if (problem) throw new TargetRefused(`the URL ${problem}`);
  const url = new URL(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  let resolved: { address: string; family: number };
  try {
    resolved = literal ? { address: host, family: literal } : await lookup(host, { verbatim: true });
  } catch (err) {
    throw new TargetRefused(NO_PUBLIC_ADDRESS, { cause: err });
  }
  if (!policy.allowPrivateTargets && !isPublicAddress(resolved.address)) {
    throw new TargetRefused(NO_PUBLIC_ADDRESS, { cause: new Error(`${host} resolves to ${resolved.address}`) });
  }
  // Node answers 4 or 6 for an address, a literal's or the resolver's.
  return { url, address: resolved.address, family: resolved.family === 6 ? 6 : 4 };
}

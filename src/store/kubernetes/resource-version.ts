/**
 * Comparing resourceVersions. Kubernetes says they are opaque, but they are etcd revisions
 * in practice: the cache compares them as numbers when they are, to tell a late watch
 * event from a newer version.
 */

/** Kubernetes resourceVersions are etcd revisions in practice; compare them as numbers when they are. */
export function isOlder(candidate: string, current: string): boolean {
  if (!/^\d+$/.test(candidate) || !/^\d+$/.test(current)) return false;
  return BigInt(candidate) < BigInt(current);
}

/** Whether `candidate` is a later version than `current`; when they do not compare, take the candidate. */
export function isNewer(candidate: string, current: string): boolean {
  if (!/^\d+$/.test(candidate) || !/^\d+$/.test(current)) return candidate !== current;
  return BigInt(candidate) > BigInt(current);
}

/** The later of two resourceVersions (the first when they do not compare). */
export function laterVersion(a: string, b: string | undefined): string {
  return b && isOlder(a, b) ? b : a;
}

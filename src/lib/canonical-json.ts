import { isRecord } from './unknown-values';

/**
 * JSON with object keys sorted at every depth. The Kubernetes API server hands objects
 * back with their keys sorted (Go encodes maps that way), the embedded store in the order
 * they were written: comparing or hashing plain JSON.stringify output would see a change
 * where there is none, and a reconciler would rewrite the object on every look.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

/** Whether two JSON values are equal, whatever the order of their keys. */
export function sameJson(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

/**
 * sameJson of two JSON objects without the `ignored` members, member by member: a writer
 * builds the next version from the last (`{ ...status, ...changes }`), so most members are
 * the very same value and cost no serialisation; only those that differ by reference are
 * compared as JSON. An undefined member is an absent one, as in JSON.
 */
export function sameJsonApartFrom(a: Record<string, unknown>, b: Record<string, unknown>, ignored: ReadonlySet<string>): boolean {
  for (const key in a) {
    if (ignored.has(key)) continue;
    const [x, y] = [a[key], b[key]];
    if (x !== y && (x === undefined || y === undefined || !sameJson(x, y))) return false;
  }
  for (const key in b) if (!ignored.has(key) && a[key] === undefined && b[key] !== undefined) return false;
  return true;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isRecord(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys(value[key]);
  return sorted;
}

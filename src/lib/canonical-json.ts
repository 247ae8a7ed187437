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
  return canonicalJson(a) === canonicalJson(b);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/** Capped exponential backoff: `baseMs` after the first failure (`step` 0), doubling to `maxMs`. */
export function backoffMs(step: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** step);
}

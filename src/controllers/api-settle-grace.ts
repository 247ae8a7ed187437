/**
 * Families whose API requests settle a spec change themselves (write the spec, then the
 * status with `<family>.updated` naming the caller) also have a reconciler that settles
 * the changes made with kubectl. Between the request's two writes the reconciler would
 * see the same unsettled spec and settle it first, as `system`; it leaves a change
 * written moments ago to the request instead. A kubectl edit leaves the store's
 * updated-at as it was (only the service's writes stamp it), so it is settled at once.
 */
import type { StoredObject } from '../store/types';
import { API_SETTLE_GRACE_MS } from '../events/write-timing';

/** How long an unsettled spec change is still left to the API request that wrote it: 0 when it is settled or not the API's. */
export function apiSettleWait(resource: StoredObject<unknown, { observed_generation?: number }>): number {
  if (resource.meta.generation === resource.status.observed_generation) return 0;
  const sinceWrite = Date.now() - Date.parse(resource.meta.updatedAt);
  return sinceWrite >= 0 && sinceWrite < API_SETTLE_GRACE_MS ? API_SETTLE_GRACE_MS - sinceWrite : 0;
}

/**
 * What the API records of a request that a reconciler carries out, so that the events of
 * the change name who asked. A deletion has no spec to hold it, so the requester goes in a
 * label, written before the deletion is asked for; a kubectl delete has none and its
 * events say `system`.
 */
import type { StoredObject } from '../store/types';

export const DELETED_BY_LABEL = 'cloudplane.dev/deleted-by';

/** Label values allow letters, digits, `-`, `_` and `.` (63 at most); key and user ids are of that form. */
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;

export function deletedByLabels(labels: Record<string, string>, actor: string): Record<string, string> {
  return LABEL_VALUE.test(actor) ? { ...labels, [DELETED_BY_LABEL]: actor } : labels;
}

export function deletedBy(resource: StoredObject<unknown, unknown>): string | undefined {
  return resource.meta.labels[DELETED_BY_LABEL];
}

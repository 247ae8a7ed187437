/**
 * What the API records of a request that a reconciler carries out, so that the events of
 * the change name who asked. The requester goes in labels: of a deletion, written before
 * the deletion is asked for; of a change of the spec, in the same write, with the
 * generation it makes, so that a later kubectl edit (which leaves the labels as they were)
 * is not told as theirs. What kubectl does has no requester: its events say `system`.
 */
import type { StoredObject } from '../store/types';

export const DELETED_BY_LABEL = 'cloudplane.dev/deleted-by';
export const CHANGED_BY_LABEL = 'cloudplane.dev/changed-by';
export const CHANGED_GENERATION_LABEL = 'cloudplane.dev/changed-generation';

/** Label values allow letters, digits, `-`, `_` and `.` (63 at most); key and user ids are of that form. */
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;

export function deletedByLabels(labels: Record<string, string>, actor: string): Record<string, string> {
  return LABEL_VALUE.test(actor) ? { ...labels, [DELETED_BY_LABEL]: actor } : labels;
}

export function deletedBy(resource: StoredObject<unknown, unknown>): string | undefined {
  return resource.meta.labels[DELETED_BY_LABEL];
}

/** The labels of a spec write by `actor` that makes `generation`. */
export function changedByLabels(labels: Record<string, string>, actor: string, generation: number): Record<string, string> {
  return LABEL_VALUE.test(actor) ? { ...labels, [CHANGED_BY_LABEL]: actor, [CHANGED_GENERATION_LABEL]: String(generation) } : labels;
}

/** Who asked for the resource's current generation of the spec, if the API recorded it (not a kubectl edit). */
export function changedBy(resource: StoredObject<unknown, unknown>): string | undefined {
  const { labels, generation } = resource.meta;
  return labels[CHANGED_GENERATION_LABEL] === String(generation) ? labels[CHANGED_BY_LABEL] : undefined;
}

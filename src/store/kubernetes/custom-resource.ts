/**
 * A custom resource as the API server sends it, and the stored object it is to the store:
 * spec as is, the record's status (snake_case) from the status subresource, the metadata
 * the store keeps in labels and annotations.
 */
import { NewObject, StoredObject } from '../types';
import { nowIso } from '../../lib/time';
import { hasStrings, recordAt } from '../../lib/unknown-values';
import { KubeObject } from './watcher';
import {
  API_VERSION,
  CREATED_AT_ANNOTATION,
  FINALIZER,
  GROUP,
  ID_LABEL,
  objectName,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
  teamOfNamespace,
  UPDATED_AT_ANNOTATION,
  VERSION,
} from './names';
import { known } from '../../lib/known';
import { FIRST_STATUS_ANNOTATION } from './first-status';

export interface KindInfo {
  kind: string;
  plural: string;
  idPrefix: string;
}

/** The metadata the store reads of a custom resource; timestamps are strings in JSON, Dates from the typed client. */
interface RawMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  /** Dropped as it comes in (cached-object.ts). */
  managedFields?: unknown;
}

/**
 * A custom resource as the API server sends it. The custom objects API is untyped (its
 * answers are `any`), and so are the watch's events: they take this type where they arrive
 * (the `call<Raw>`s, the watcher's), as the CRD's schema has the API server keep to it.
 */
export type Raw = KubeObject & { metadata: RawMetadata; spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** Whether an answer is a custom resource with a version: a delete's is a Status instead once the object is gone. */
export function isVersionedRaw(answer: unknown): answer is Raw {
  const metadata = recordAt(answer, 'metadata');
  return hasStrings(metadata, 'name', 'resourceVersion') && metadata.resourceVersion !== '';
}

/** Runs a request of the custom objects API where no `call<Raw>` does, its answer typed as it arrives. */
export const rawAnswer = (request: () => Promise<Raw>): Promise<Raw> => request();

/** What the cache keeps of a custom resource: the object it is, and the resource it came from. */
export interface CachedResource {
  object: StoredObject;
  raw: Raw;
}

/** A custom resource as the custom objects API's requests name it. */
export function whereOf(info: KindInfo, raw: Raw) {
  return {
    group: GROUP,
    version: VERSION,
    namespace: known(raw.metadata.namespace, 'the namespace of a custom resource'),
    plural: info.plural,
    name: raw.metadata.name,
  };
}

const laterOf = (a: string | undefined, b: string | undefined) => (!a ? b : !b ? a : a > b ? a : b);

/** The id of a custom resource: its label, or one derived from a name like `lb-x7k2...`. */
export function idOf(info: KindInfo, raw: Raw): string | null {
  const label = raw.metadata.labels?.[ID_LABEL];
  if (label) return label;
  const m = new RegExp(`^${info.idPrefix}-([0-9a-z]{16,26})$`).exec(raw.metadata.name);
  return m ? `${info.idPrefix}_${m[1]}` : null;
}

export function toStored(info: KindInfo, raw: Raw, id: string, systemNamespace: string): StoredObject {
  const md = raw.metadata;
  const iso = (value: string | Date | undefined) => (value === undefined ? undefined : new Date(value).toISOString());
  const createdAt = md.annotations?.[CREATED_AT_ANNOTATION] ?? iso(md.creationTimestamp) ?? nowIso();
  const { updated_at: statusUpdatedAt, ...status } = recordStatusOf(raw.status);
  const statusUpdated = typeof statusUpdatedAt === 'string' ? statusUpdatedAt : undefined;
  const updatedAt = laterOf(laterOf(md.annotations?.[UPDATED_AT_ANNOTATION], statusUpdated), createdAt) ?? createdAt;
  const labels = { ...(md.labels ?? {}) };
  delete labels[ID_LABEL];
  return {
    meta: {
      kind: info.kind,
      id,
      team: teamOfNamespace(md.namespace ?? '', systemNamespace),
      resourceVersion: md.resourceVersion ?? '',
      generation: md.generation ?? 1,
      createdAt,
      updatedAt,
      ...(md.deletionTimestamp ? { deletionTimestamp: iso(md.deletionTimestamp) } : {}),
      labels,
      ...(md.uid ? { object: { name: raw.metadata.name, uid: md.uid } } : {}),
      ...(md.annotations?.[PAUSED_ANNOTATION] === 'true' ? { paused: true } : {}),
      ...(md.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ? { reconcileRequestedAt: md.annotations[RECONCILE_REQUESTED_ANNOTATION] } : {}),
      // The cache keeps the annotation only while the status it holds is not written (id-claims.ts).
      ...(md.annotations?.[FIRST_STATUS_ANNOTATION] !== undefined && raw.status !== undefined ? { statusUnwritten: true } : {}),
    },
    spec: raw.spec ?? {},
    status: status,
  };
}

/** A new custom resource of the store's, as created: the store adds its sealed first status (first-status.ts). */
export function newResource<S, St>(info: KindInfo, input: NewObject<S, St>, namespace: string, now: string) {
  const annotations: Record<string, string> = { [CREATED_AT_ANNOTATION]: now, [UPDATED_AT_ANNOTATION]: now };
  return {
    apiVersion: API_VERSION,
    kind: info.kind,
    metadata: {
      name: objectName(input.meta.id),
      namespace,
      labels: { ...(input.meta.labels ?? {}), [ID_LABEL]: input.meta.id },
      annotations,
      finalizers: [FINALIZER],
    },
    spec: input.spec,
  };
}

/**
 * The status as the custom resource carries it: the record's snake_case status, except the
 * fields Kubernetes tools read by their conventional names (kstatus, Flux and Argo CD read
 * `status.observedGeneration`; conditions are in metav1.Condition form already).
 */
export function kubeStatusOf(status: Record<string, unknown>): Record<string, unknown> {
  const { observed_generation: observedGeneration, ...rest } = status;
  return observedGeneration === undefined ? rest : { ...rest, observedGeneration };
}

/** The record's status from a custom resource's; one written before observedGeneration (snake_case) reads the same. */
export function recordStatusOf(status: Record<string, unknown> | undefined): Record<string, unknown> {
  const { observedGeneration, observed_generation: legacy, ...rest } = status ?? {};
  const generation = observedGeneration ?? legacy;
  return generation === undefined ? rest : { ...rest, observed_generation: generation };
}

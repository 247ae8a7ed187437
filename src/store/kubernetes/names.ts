/**
 * How Cloudplane's identities map onto Kubernetes names (docs/api.md "Identifiers"): a team
 * is a namespace (`team_x7k2` <-> `team-x7k2`), an object is named after its id with
 * `_` turned into `-`, and the id itself is kept in a label, so objects created with
 * kubectl under any other name still have one.
 */
import { objectNameForId } from '../../lib/ids';

export const GROUP = 'cloudplane.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const ID_LABEL = `${GROUP}/id`;
export const CREATED_AT_ANNOTATION = `${GROUP}/created-at`;
export const UPDATED_AT_ANNOTATION = `${GROUP}/updated-at`;
export const FINALIZER = `${GROUP}/finalizer`;
export const SECRET_NAME_ANNOTATION = `${GROUP}/secret-name`;
/** On the ConfigMap of a store record: the record's name in the store. */
export const RECORD_NAME_ANNOTATION = `${GROUP}/record-name`;
/** `"true"` on the store's record ConfigMaps, which the store watches (and no driver's). */
export const STORE_RECORD_LABEL = `${GROUP}/store-record`;
/** `"true"` on a custom resource stops its reconciliation until removed (docs/kubernetes.md). */
export const PAUSED_ANNOTATION = `${GROUP}/paused`;
/** A reconcile pass asked for now (ObjectMeta.reconcileRequestedAt): any new value queues one, as Flux's `requestedAt`. */
export const RECONCILE_REQUESTED_ANNOTATION = `${GROUP}/reconcile-requested-at`;
/**
 * On a custom resource an earlier version's store created for the API, whose status was a
 * second write: until one is there adoption leaves it a grace instead of taking it for
 * kubectl's. Read while a rolling upgrade may leave such an object; this version's creates
 * are one write that carries the first status (first-status.ts). A label, not an
 * annotation, because a StoredObject's meta carries labels; the API never shows them.
 */
export const STATUS_PENDING_LABEL = `${GROUP}/status-pending`;
export const MANAGED_BY = 'app.kubernetes.io/managed-by=cloudplane';
/** The team of service-wide data (the cursor signing key). */
export const SYSTEM_TEAM = '__system';

const TEAM_ID = /^team_([0-9a-z]{16,26})$/;
const TEAM_NAMESPACE = /^team-([0-9a-z]{16,26})$/;

export function namespaceOfTeam(team: string, systemNamespace: string): string {
  if (team === SYSTEM_TEAM) return systemNamespace;
  const m = TEAM_ID.exec(team);
  return m ? `team-${m[1]}` : team;
}

/** The team a namespace stands for; a namespace that is no team's is a team of its own name. */
export function teamOfNamespace(namespace: string, systemNamespace: string): string {
  if (namespace === systemNamespace) return SYSTEM_TEAM;
  const m = TEAM_NAMESPACE.exec(namespace);
  return m ? `team_${m[1]}` : namespace;
}

export const objectName = objectNameForId;

/** An object name from a store entry's name: DNS-safe, with the original kept in an annotation. */
export function entryObjectName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .slice(0, 253);
}

/** What the rightful owner of an id is judged by: a custom resource's immutable fields. */
export interface IdClaimant {
  metadata: { name: string; uid?: string; creationTimestamp?: string | Date; [key: string]: unknown };
}

/**
 * Of custom resources of one kind and namespace that carry the same id (a manifest copied
 * with its labels), the one the id belongs to: the one named after it, else the oldest
 * (uid breaks a tie: timestamps have seconds only). Judged by immutable fields only, so
 * every replica, before or after a restart, picks the same one from the same set.
 */
export function rightfulOwner<T extends IdClaimant>(id: string, claimants: T[]): T | undefined {
  const named = claimants.find((c) => c.metadata.name === objectName(id));
  if (named) return named;
  const createdAt = (c: T) => (c.metadata.creationTimestamp === undefined ? Infinity : new Date(c.metadata.creationTimestamp).getTime());
  const uid = (c: T) => c.metadata.uid ?? '';
  return [...claimants].sort((a, b) => createdAt(a) - createdAt(b) || (uid(a) < uid(b) ? -1 : uid(a) > uid(b) ? 1 : 0))[0];
}

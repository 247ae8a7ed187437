/**
 * A record's `spec.deletionPolicy` (after Crossplane): whether deleting the resource
 * releases what was provisioned for it. The Kubernetes store acts on it when it removes a
 * custom resource (kubernetes/store.ts: an Orphan deletion), the managed reconciler when
 * it releases (controllers/managed.ts), and the CRDs declare it (resources/crd.ts).
 */
import { fieldOf } from '../lib/unknown-values';

/**
 * A spec field of the custom resource only, about the record rather than what is provisioned
 * (docs/kubernetes.md): changing it is no `<family>.updated` (resources/transitions.ts).
 */
export const DELETION_POLICY_FIELD = 'deletionPolicy';

/**
 * Whether deleting the resource leaves what was provisioned for it in place: its custom
 * resource's `spec.deletionPolicy` (after Crossplane) is `Orphan`; `Delete`, the default,
 * releases it.
 */
export const orphansOnDelete = (spec: object | undefined): boolean => fieldOf(spec, DELETION_POLICY_FIELD) === 'Orphan';

/**
 * A driver-backed resource as its reconciler (managed.ts) and the publisher of its
 * connection details (connection-details.ts) both see it.
 */
import type { AnyFamily, DrivenStatus, Resource } from '../resources/family';
import type { Managed, Owner } from '../drivers/types';
import type { ConnectionSecretSpec } from '../resources/schema-kit';
import { API_VERSION } from '../store/kubernetes/names';

/** A resource as its driver sees it; every driven family may name a Secret for its connection details. */
export type Driven = Resource<object & ConnectionSecretSpec, DrivenStatus>;

/** What the driver is handed of a resource: its identity, what it should be, what was made for it and who owns that. */
export function managedOf<Desired>(family: AnyFamily, resource: Driven, desired: Desired): Managed<Desired> {
  const object = resource.meta.object;
  const owner: Owner | null = object ? { apiVersion: API_VERSION, kind: family.kind, name: object.name, uid: object.uid } : null;
  return {
    id: resource.meta.id,
    team: resource.meta.team,
    generation: resource.meta.generation,
    desired,
    external: resource.status.external ?? null,
    owner,
  };
}

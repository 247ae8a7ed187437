/**
 * Resources created outside the API (kubectl apply, GitOps) arrive with a spec and no
 * status. Before a family's reconciler sees one, it gets the first status the API would
 * have given it, and its creation event. A grace period leaves the API's own second
 * write (the status, right after the create) the time to land first.
 */
import type { Store } from '../store/types';
import type { AnyFamily, Resource } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import type { ReconcileResult, Reconciler } from './controller';

const ADOPTION_GRACE_MS = 5_000;

export function adopting(family: AnyFamily, inner: Reconciler, store: Store, writer: ResourceWriter): Reconciler {
  return {
    kind: inner.kind,
    async reconcile(team: string, id: string): Promise<ReconcileResult | void> {
      const resource = (await store.get(family.kind, team, id)) as Resource | undefined;
      if (resource && !resource.status?.status) {
        if (resource.meta.deletionTimestamp) {
          await store.remove(family.kind, team, id, resource.meta.resourceVersion);
          return;
        }
        const age = Date.now() - Date.parse(resource.meta.createdAt);
        if (age < ADOPTION_GRACE_MS) return { requeueAfterMs: ADOPTION_GRACE_MS - age };
        await writer.initialize(family, resource, 'system');
        return;
      }
      return inner.reconcile(team, id);
    },
  };
}

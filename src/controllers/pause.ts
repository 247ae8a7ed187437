/**
 * The pause of one resource: a custom resource annotated `cloudplane.dev/paused: "true"`
 * is left as it is (no adoption, no driver call, no status write, not even of a deletion
 * asked for meanwhile) until the annotation is removed, whose watch event brings it back
 * to its reconciler. Outermost of the reconciler wrappers, so nothing below runs.
 */
import type { Store } from '../store/types';
import { decorating, ReconcileResult, Reconciler } from './controller';

export function pausable(inner: Reconciler, store: Store): Reconciler {
  return decorating(inner, async (team: string, id: string): Promise<ReconcileResult | undefined> => {
    const resource = await store.get(inner.kind, team, id);
    if (resource?.meta.paused) return;
    return inner.reconcile(team, id);
  });
}

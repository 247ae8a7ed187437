/**
 * What a resource's reconcile passes say on the resource itself, so that "why is this not
 * ready?" is answered where the resource is read (docs/api.md, "Why a resource is not
 * ready"): the error its passes fail with (`status.reconcile_error`, and the Synced condition
 * False with reason ReconcileError), cleared by the next pass that succeeds; and the last
 * ask for a pass now that a pass handled (`status.last_handled_reconcile_at`, as Flux's
 * `lastHandledReconcileAt`). Every family's own reconciler is wrapped in it (registry.ts).
 *
 * A pass that fails still fails: the controller retries it with its backoff. Only what
 * changes is written, and a changed message at most every ERROR_REWRITE_MS, since each
 * write is itself a change that queues a pass.
 */
import { ConflictError, StoreUnavailableError, type Store } from '../store/types';
import { asStored, lifecycleState, type AnyFamily, type PassError, type Resource } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import { PASS_ERROR_MAX } from '../resources/schema-kit';
import { textOf } from '../lib/unknown-values';
import { nowIso } from '../lib/time';
import { decorating, type ReconcileResult, type Reconciler } from './controller';

/** A message that changes on every pass (a port, a time in it) is written again no sooner than this. */
const ERROR_REWRITE_MS = 30_000;
const SYSTEM = 'system';

/** Failures that are no news about the resource: a write another writer won (retried at once), the store itself away (nothing can be written). */
const reportable = (err: unknown) => !(err instanceof ConflictError) && !(err instanceof StoreUnavailableError);

/** A pass's error as one line within the status's limit. */
export function passErrorText(err: unknown): string {
  const text = textOf(err).replace(/\s+/g, ' ').trim() || 'The reconcile pass failed.';
  return text.length > PASS_ERROR_MAX ? `${text.slice(0, PASS_ERROR_MAX - 3)}...` : text;
}

export function reportingPasses(family: AnyFamily, inner: Reconciler, store: Store, writer: ResourceWriter): Reconciler {
  /** team/id -> when its error was last written: only resources whose passes fail are here. */
  const errorWrittenAt = new Map<string, number>();

  /** The status fields the pass just ended calls for, or null when none changes. */
  function changesAfter(resource: Resource, failure: { err: unknown } | null): Record<string, unknown> | null {
    const status = asStored(resource.status);
    const key = `${resource.meta.team}/${resource.meta.id}`;
    const changes: Record<string, unknown> = {};
    const requested = resource.meta.reconcileRequestedAt;
    if (requested !== undefined && status.last_handled_reconcile_at !== requested) changes.last_handled_reconcile_at = requested;
    if (!failure) {
      errorWrittenAt.delete(key);
      if (status.reconcile_error) changes.reconcile_error = null;
    } else if (reportable(failure.err)) {
      const message = passErrorText(failure.err);
      const previous = status.reconcile_error;
      const due = !previous || (previous.message !== message && Date.now() - (errorWrittenAt.get(key) ?? 0) >= ERROR_REWRITE_MS);
      if (due) {
        changes.reconcile_error = { message, since: nowIso() } satisfies PassError;
        errorWrittenAt.set(key, Date.now());
      }
    }
    return Object.keys(changes).length > 0 ? changes : null;
  }

  return decorating(inner, async (team: string, id: string): Promise<ReconcileResult | undefined> => {
    let failure: { err: unknown } | null = null;
    let result: ReconcileResult | undefined;
    try {
      result = await inner.reconcile(team, id);
    } catch (err) {
      failure = { err };
    }
    const resource = store.peek<Resource['spec'], Resource['status']>(family.kind, team, id);
    // A resource gone, or one without a status yet (kubectl's, before adoption), has nowhere to say it.
    const changes = resource && lifecycleState(resource) !== undefined ? changesAfter(resource, failure) : null;
    if (changes) {
      try {
        await writer.mutateStatus(family, team, id, () => changes, SYSTEM);
      } catch {
        // Not written (the store away, the resource removed meanwhile): the next pass says it again.
        errorWrittenAt.delete(`${team}/${id}`);
      }
    }
    if (failure) throw failure.err;
    return result;
  });
}

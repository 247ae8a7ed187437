/**
 * Resources created outside the API (kubectl apply, GitOps) arrive with a spec and no
 * status. Before a family's reconciler sees one, it is taken in as a POST of the same
 * body would be: the family's create rules judge the spec (the CRD has only checked its
 * shape), the defaults they fill in are written into the spec, a generated secret is
 * kept, and it gets its first status and creation event. A spec the rules refuse starts
 * `failed` with the API's error message and is never provisioned. It is adopted at once.
 * (What the API creates has a status from its first write on: in cluster mode it rides
 * sealed in annotations until the first status write, store/kubernetes/first-status.ts.
 * An earlier version's create was two writes, the status second, and marked the object
 * STATUS_PENDING_LABEL: that one is left a grace for its status to land, then adopted all
 * the same.) A manifest copied from an API-made object loses the copied mark when the
 * store gives it an id of its own, so it too is adopted at once.
 *
 * A refused resource is judged again whenever its spec changes (kubectl apply/edit, a
 * GitOps sync): fixing the manifest fixes the resource. What marks it is on the record,
 * so a restart forgets nothing: its Synced condition's reason is SPEC_REFUSED (a provider
 * failure says ReconcileError and is left alone), and its observed_generation is the
 * generation that was judged.
 */
import type { Store } from '../store/types';
import type { AnyFamily, Resource, RuleContext } from '../resources/family';
import type { ResourceWriter } from '../resources/writer';
import { SPEC_REFUSED } from '../resources/transitions';
import { withNewSecret, withUniqueName } from '../resources/creation';
import { QuotaScope, withinQuota } from '../resources/quota';
import { ApiError } from '../lib/errors';
import { STATUS_PENDING_LABEL } from '../store/kubernetes/names';
import { decorating, ReconcileResult, Reconciler } from './controller';
import { ADOPTION_GRACE_MS } from '../events/write-timing';
import { asStored } from '../resources/family';

const ACTOR = 'system';

export function adopting(family: AnyFamily, inner: Reconciler, store: Store, writer: ResourceWriter, quota: QuotaScope, rules: RuleContext): Reconciler {
  // Without cluster settings (the embedded store writes status with the create, marks nothing): the default.
  const graceMs = rules.config.kubernetes?.adoptionGraceMs ?? ADOPTION_GRACE_MS;
  return decorating(inner, async (team: string, id: string): Promise<ReconcileResult | undefined> => {
    const resource = await store.get<Resource['spec'], Resource['status']>(family.kind, team, id);
    if (resource && !resource.status.status) {
      if (resource.meta.deletionTimestamp) {
        await store.remove(family.kind, team, id, resource.meta.resourceVersion);
        return;
      }
      const wait = statusPendingFor(resource, graceMs);
      if (wait > 0) return { requeueAfterMs: wait };
      if (!(await adopt(family, resource, store, writer, quota, rules))) return;
    } else if (resource && refusedSpecChanged(resource)) {
      if (!(await adopt(family, resource, store, writer, quota, rules))) return;
    }
    // An accepted resource goes on to its first step in the same pass, not after every
    // other resource of a bulk apply has been adopted.
    return inner.reconcile(team, id);
  });
}

/**
 * How long a status-less resource is still left to the API's status write: none unless
 * the store marked it at create, else what remains of the grace since its creation.
 */
function statusPendingFor(resource: Resource, graceMs: number): number {
  if (resource.meta.labels[STATUS_PENDING_LABEL] !== 'true') return 0;
  return graceMs - (Date.now() - Date.parse(resource.meta.createdAt));
}

/** A resource adoption refused whose spec changed since it was judged (and is not being deleted). */
function refusedSpecChanged(resource: Resource): boolean {
  const { status, meta } = resource;
  if (status.status !== 'failed' || meta.deletionTimestamp || meta.generation <= status.observed_generation) return false;
  return (asStored(status).conditions ?? []).some((c) => c.type === 'Synced' && c.reason === SPEC_REFUSED);
}

/**
 * Judges the spec as a POST of it would be; also a refused resource's changed spec, which
 * then starts over. Answers whether the spec was accepted.
 */
async function adopt(family: AnyFamily, resource: Resource, store: Store, writer: ResourceWriter, quota: QuotaScope, rules: RuleContext): Promise<boolean> {
  const { team, id } = resource.meta;
  // Set inside the callbacks below (an object: the compiler would take a `let` for never set).
  const progress = { judged: false };
  try {
    // The CR's spec is the create body; spec-only fields (psk_version, backends) are ignored by the rules.
    const ruled: object = family.specFromCreate(resource.spec, rules);
    // Over the team's quota it is refused like a broken rule: `failed`, with the reason.
    await withinQuota(quota, family, team, id, () =>
      withUniqueName(store, family, team, ruled, id, async () => {
        progress.judged = true;
        const current = await writeDefaults(store, resource, ruled);
        // Kept by an earlier pass that stopped before the status write: it is this resource's.
        const kept = family.secret ? await store.secrets.get(team, family.secret.secretName(id)) : undefined;
        const initialize = () => writer.initialize(family, current, ACTOR);
        await (kept ? initialize() : withNewSecret(store, family, team, id, current.spec, undefined, initialize));
      }),
    );
    return true;
  } catch (err) {
    // A broken rule is the resource's fault; a failed write (a conflict, the store away) is retried.
    if (progress.judged || !(err instanceof ApiError)) throw err;
    await writer.initialize(family, resource, ACTOR, err.message);
    return false;
  }
}

/**
 * Writes into the spec, once, the fields the rules fill in that the CR leaves out (as the
 * API server's defaulting would); the values the CR gives are kept as they are.
 */
async function writeDefaults(store: Store, resource: Resource, ruled: object): Promise<Resource> {
  const spec: object = resource.spec;
  const missing = Object.entries(ruled).filter(([field]) => !(field in spec));
  if (missing.length === 0) return resource;
  const defaulted = { ...spec, ...Object.fromEntries(missing) };
  return await store.update({ ...resource, spec: defaulted });
}

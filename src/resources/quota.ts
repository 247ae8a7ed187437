/**
 * Per-team quotas (CLOUDPLANE_QUOTAS, defaults in config.ts): every path that makes a
 * resource a user asked for (the API's creates, the adoption of a kubectl-made custom
 * resource) runs its write through `withinQuota`, which answers 422 quota_exceeded once
 * the team holds its quota of the family. A narrower count runs through `withinLimit` with
 * a rule of its own (the listeners among a team's webhooks, api/routes/webhook-listeners.ts).
 *
 * What counts is what the team holds now: a resource the API shows, except
 * - one that is gone or going away for good (`deleted`, `destroyed`) or a revoked key;
 * - a finished job (`completed`, `failed`, `cancelled`): that is history, so the job quota
 *   bounds the jobs queued or running at once, and a team that ran thousands is not
 *   stopped by its past;
 * - a custom resource adoption refused (it is `failed` with SpecRefused and holds nothing);
 * - one without a status yet (a kubectl-made one waiting for adoption is judged then).
 *
 * Two creates racing at the limit do not both pass within a replica: the count and a
 * reservation for the resource about to be written are taken together, under a lock per
 * team and family, and the reservation lasts until the write is done. The write itself
 * runs outside the lock, so creates of one family still share disk flushes. That is the
 * whole count of a process alone. Replicas (`scope.shared`, NATS JetStream) keep the
 * reservations in a ledger every replica swaps its claims into (quota-ledger.ts): the
 * last place is taken once, whichever replica the creates land on. The lock then only
 * spares a replica's own creates a lost swap. While the ledger cannot be reached each
 * replica counts alone, as before it was shared, rather than refuse every create.
 */
import type { Store, StoredObject } from '../store/types';
import type { SharedRecords } from '../store/shared-records';
import { ApiError, quotaExceeded } from '../lib/errors';
import { KeyedMutex } from '../lib/mutex';
import { claimInLedger, QuotaRule } from './quota-ledger';
import { SPEC_REFUSED } from './transitions';
import type { AnyFamily, BaseStatus } from './family';
import { known } from '../lib/known';
import { entryOf } from '../lib/maps';

/**
 * Each family declares its default quota (`quota` of its definition): far above what a
 * team uses (the largest rarely holds a few hundred of anything), yet bounded, so that no
 * team can grow the store without end (a team once made 10,000 subscriptions; one event to
 * 2,000 of them wrote 11.7 MB). Webhooks are lower: every event is copied once per
 * matching subscription. Messages bound what a team's conversations with the agent keep
 * (threads cannot be deleted, so neither quota is released).
 *
 * Quotas that count a part of a family are declared here: listeners (`cloudplane listen`)
 * are webhooks too, and each holds a stream open, so a few per person
 * (api/routes/webhook-listeners.ts).
 */
export const NARROWER_QUOTAS = { webhook_listener: 25 } as const;

/** The limit of every quota by name: a family's (its name) or a narrower one. */
export type Quotas = Readonly<Record<string, number>>;

/**
 * The quotas in force: the families' defaults and NARROWER_QUOTAS, with `overrides`
 * (CLOUDPLANE_QUOTAS) over them. Throws, naming the setting, for a name that is no quota.
 */
export function quotaLimits(families: readonly AnyFamily[], overrides: Readonly<Record<string, number>>): Quotas {
  const defaults: Record<string, number> = {};
  for (const family of families) if (family.quota) defaults[family.name] = family.quota.default;
  Object.assign(defaults, NARROWER_QUOTAS);
  for (const name of Object.keys(overrides)) {
    if (!Object.hasOwn(defaults, name)) throw new Error(`CLOUDPLANE_QUOTAS: "${name}" is not one of ${Object.keys(defaults).join(', ')}`);
  }
  return { ...defaults, ...overrides };
}

const GONE_STATES = ['deleted', 'destroyed'];

const countLock = new KeyedMutex();
/** Creates admitted and not yet done, by team and family: the ids they will have. */
const reservations = new Map<string, Set<string>>();

/** What quotas are counted against: the store, the limits, and the ledger replicas share (when there are replicas). */
export interface QuotaScope {
  store: Store;
  limits: Quotas;
  shared?: SharedRecords;
  /** Told when the shared ledger cannot be reached and a create is counted by this replica alone. */
  onSharedFailure?: (err: unknown) => void;
}

/** Whether a stored resource uses up one of its team's quota of its family. */
export function holdsQuota(family: AnyFamily, object: StoredObject<unknown, Partial<BaseStatus> | undefined>): boolean {
  const state = object.status?.status;
  if (state === undefined || GONE_STATES.includes(state)) return false;
  if (family.quota?.releasedIn?.includes(state)) return false;
  const refused = state === 'failed' && (object.status?.conditions ?? []).some((c) => c.type === 'Synced' && c.reason === SPEC_REFUSED);
  return !refused;
}

/** A family's own quota: the store keeps its count (resources/store-of-record.ts counts by holdsQuota), so no create scans the team. */
const familyRule = (family: AnyFamily): QuotaRule => ({
  quota: family.name,
  family,
  title: family.title,
  holds: (object) => holdsQuota(family, object),
  held: (store, team) => store.count(family.kind, team),
});

/**
 * Runs `create` if the team has room for more resources of the family, else throws 422
 * quota_exceeded. `ids` are the ids the new resources will have (one per resource the
 * create writes; adoption's resource exists already and must not count against itself).
 */
export async function withinQuota<R>(scope: QuotaScope, family: AnyFamily, team: string, ids: string | string[], create: () => Promise<R>): Promise<R> {
  if (!family.quota) return create();
  return withinLimit(scope, familyRule(family), team, ids, create);
}

/** `withinQuota` for any rule: room for as many resources as `ids` names. */
export async function withinLimit<R, Spec>(
  scope: QuotaScope,
  rule: QuotaRule<Spec>,
  team: string,
  ids: string | string[],
  create: () => Promise<R>,
): Promise<R> {
  const { store } = scope;
  const limit = entryOf(scope.limits, rule.quota);
  if (limit === undefined) throw new Error(`no quota is named ${rule.quota}`);
  const key = `${team}/${rule.quota}`;
  const taken = typeof ids === 'string' ? [ids] : ids;
  const { shared } = scope;
  if (shared) {
    const claim = await countLock
      .run(key, () => claimInLedger(store, shared, rule, team, limit, taken))
      .catch((err: unknown) => {
        if (err instanceof ApiError) throw err;
        scope.onSharedFailure?.(err);
        return null;
      });
    if (claim) return withClaim(claim, create);
  }
  await countLock.run(key, async () => {
    const reserved = reservations.get(key) ?? new Set<string>();
    // A reserved create already written is counted once, as a reservation, and the
    // resource being adopted does not count against itself.
    const alreadyCounted = async (counted: string) => {
      const object = await store.get<Spec, Partial<BaseStatus>>(rule.family.kind, team, counted);
      return object !== undefined && rule.holds(object);
    };
    let held = await rule.held(store, team);
    for (const counted of new Set([...reserved, ...taken])) if (await alreadyCounted(counted)) held--;
    if (held + reserved.size + taken.length > limit) throw quotaExceeded(rule.title, limit);
    for (const id of taken) reserved.add(id);
    reservations.set(key, reserved);
  });
  try {
    return await create();
  } finally {
    const reserved = known(reservations.get(key), `the reservations of ${key} (this create holds some)`);
    for (const id of taken) reserved.delete(id);
    if (reserved.size === 0) reservations.delete(key);
  }
}

/** Runs `create` under a claim in the shared ledger, which it ends as the create ends. */
async function withClaim<R>(claim: { end(written: boolean): Promise<void> }, create: () => Promise<R>): Promise<R> {
  let written = false;
  try {
    const result = await create();
    written = true;
    return result;
  } finally {
    await claim.end(written);
  }
}

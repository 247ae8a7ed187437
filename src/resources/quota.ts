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
 * runs outside the lock, so creates of one family still share disk flushes. Across
 * replicas (cluster mode) creates racing on two replicas can each see room for one: a
 * team can overshoot by as many creates as run at once on other replicas.
 */
import type { Store, StoredObject } from '../store/types';
import { DEFAULT_QUOTAS, QuotaFamily, Quotas } from '../config';
import { quotaExceeded } from '../lib/errors';
import { KeyedMutex } from '../lib/mutex';
import { SPEC_REFUSED } from './transitions';
import { FINISHED_JOB_STATES } from './job';
import type { AnyFamily, BaseStatus } from './family';

/** States in which a resource no longer counts, beyond those every family shares. */
const RELEASED_STATES: Partial<Record<QuotaFamily, readonly string[]>> = {
  job: FINISHED_JOB_STATES,
  api_key: ['revoked'],
};
const GONE_STATES = ['deleted', 'destroyed'];

const countLock = new KeyedMutex();
/**
 * Creates admitted and not yet done, by team and family: the ids they will have. A create
 * that cannot name its id (an API key's is made inside the authenticator) reserves a
 * placeholder, and counts twice between its write and its end: at the very limit a
 * concurrent create may then be refused a moment early, never admitted over it.
 */
const reservations = new Map<string, Set<string>>();
let unnamed = 0;

const hasQuota = (name: string): name is QuotaFamily => Object.hasOwn(DEFAULT_QUOTAS, name);

/** Whether a stored resource uses up one of its team's quota of its family. */
export function holdsQuota(family: AnyFamily, object: StoredObject<unknown, Partial<BaseStatus> | undefined>): boolean {
  const state = object.status?.status;
  if (state === undefined || GONE_STATES.includes(state)) return false;
  if (hasQuota(family.name) && RELEASED_STATES[family.name]?.includes(state)) return false;
  const refused = state === 'failed' && (object.status?.conditions ?? []).some((c) => c.type === 'Synced' && c.reason === SPEC_REFUSED);
  return !refused;
}

/** What a quota counts of a team: which of the family's stored resources, and how many there are now. */
export interface QuotaRule<Spec = unknown> {
  quota: QuotaFamily;
  family: AnyFamily;
  /** What one counted resource is called in the refusal ("The team's quota of 10 <title>s ..."). */
  title: string;
  holds(object: StoredObject<Spec, Partial<BaseStatus> | undefined>): boolean;
  held(store: Store, team: string): Promise<number>;
}

/** A family's own quota: the store keeps its count (store/index.ts counts by holdsQuota), so no create scans the team. */
const familyRule = (family: AnyFamily, quota: QuotaFamily): QuotaRule => ({
  quota,
  family,
  title: family.title,
  holds: (object) => holdsQuota(family, object),
  held: (store, team) => store.count(family.kind, team),
});

/**
 * Runs `create` if the team has room for more resources of the family, else throws 422
 * quota_exceeded. `ids` are the ids the new resources will have, when the caller knows
 * them (one per resource the create writes; adoption's resource exists already and must
 * not count against itself).
 */
export async function withinQuota<R>(store: Store, quotas: Quotas, family: AnyFamily, team: string, ids: string | string[] | undefined, create: () => Promise<R>): Promise<R> {
  if (!hasQuota(family.name)) return create();
  return withinLimit(store, quotas, familyRule(family, family.name), team, ids, create);
}

/** `withinQuota` for any rule: room for as many resources as `ids` names (one when none). */
export async function withinLimit<R, Spec>(store: Store, quotas: Quotas, rule: QuotaRule<Spec>, team: string, ids: string | string[] | undefined, create: () => Promise<R>): Promise<R> {
  const limit = quotas[rule.quota];
  const key = `${team}/${rule.quota}`;
  const named = typeof ids === 'string' ? [ids] : (ids ?? []);
  const taken = named.length > 0 ? named : [`unnamed-${++unnamed}`];
  await countLock.run(key, async () => {
    const reserved = reservations.get(key) ?? new Set<string>();
    // A reserved create already written is counted once, as a reservation, and the
    // resource being adopted does not count against itself.
    const alreadyCounted = async (counted: string) => {
      const object = await store.get<Spec, Partial<BaseStatus>>(rule.family.kind, team, counted);
      return object !== undefined && rule.holds(object);
    };
    let held = await rule.held(store, team);
    for (const counted of new Set([...reserved, ...named])) if (await alreadyCounted(counted)) held--;
    if (held + reserved.size + taken.length > limit) throw quotaExceeded(rule.title, limit);
    for (const id of taken) reserved.add(id);
    reservations.set(key, reserved);
  });
  try {
    return await create();
  } finally {
    const reserved = reservations.get(key)!;
    for (const id of taken) reserved.delete(id);
    if (reserved.size === 0) reservations.delete(key);
  }
}

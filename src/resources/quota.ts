/**
 * Per-team quotas (CLOUDPLANE_QUOTAS, defaults in config.ts): every path that makes a
 * resource a user asked for (the API's creates, the adoption of a kubectl-made custom
 * resource) runs its write through `withinQuota`, which answers 422 quota_exceeded once
 * the team holds its quota of the family.
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

/**
 * Runs `create` if the team has room for one more resource of the family, else throws 422
 * quota_exceeded. `id` is the id the new resource will have, when the caller knows it
 * (adoption's resource exists already and must not count against itself).
 */
export async function withinQuota<R>(store: Store, quotas: Quotas, family: AnyFamily, team: string, id: string | undefined, create: () => Promise<R>): Promise<R> {
  if (!hasQuota(family.name)) return create();
  const limit = quotas[family.name];
  const key = `${team}/${family.kind}`;
  const reservation = id ?? `unnamed-${++unnamed}`;
  await countLock.run(key, async () => {
    const reserved = reservations.get(key) ?? new Set<string>();
    // The store keeps the count of what holds quota (store/index.ts counts by holdsQuota), so
    // no create scans the team. A reserved create already written is counted once, as a
    // reservation, and the resource being adopted does not count against itself.
    const alreadyCounted = async (counted: string) => {
      const object = (await store.get(family.kind, team, counted)) as StoredObject<unknown, Partial<BaseStatus>> | undefined;
      return object !== undefined && holdsQuota(family, object);
    };
    let held = await store.count(family.kind, team);
    for (const counted of new Set([...reserved, ...(id ? [id] : [])])) if (await alreadyCounted(counted)) held--;
    if (held + reserved.size >= limit) throw quotaExceeded(family.title, limit);
    reserved.add(reservation);
    reservations.set(key, reserved);
  });
  try {
    return await create();
  } finally {
    const reserved = reservations.get(key)!;
    reserved.delete(reservation);
    if (reserved.size === 0) reservations.delete(key);
  }
}

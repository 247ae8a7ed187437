/**
 * The members of a team: invited by e-mail with a role, given another role, removed.
 * Which routes need an admin is decided for every route at once (roles.ts); what is here
 * depends on the member a request touches:
 * - only an owner may make, change or remove an owner, or act for one (an admin manages
 *   everyone else);
 * - the team always keeps an owner: demoting or removing the last one is refused with
 *   409 invalid_state;
 * - a removed member keeps its record (status removed) for the audit trail, and its keys
 *   are revoked.
 */
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { ResourceWriter, WritePrecondition } from '../resources/writer';
import type { ApiKeyAuthenticator } from './authenticator';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, Role, Team, User } from '../resources/accounts';
import type { AnyFamily, Resource } from '../resources/family';
import { settleAccount } from './settle';
import { sameJson } from '../lib/canonical-json';
import { conflict, forbidden, invalidState, notFound } from '../lib/errors';
import { KeyedMutex } from '../lib/mutex';
import { atLeast, Principal } from './roles';
import { ruleContextOf } from '../events/catalog';

/** What the member operations need of the service (the API passes its context). */
export interface AccountDeps {
  store: Store;
  writer: ResourceWriter;
  config: Config;
  authenticator: ApiKeyAuthenticator;
}

export interface Invitation {
  email: string;
  role: Role;
  name?: string;
}

/** Member changes of one team take turns on this replica, so two cannot both take the last owner away. */
const teamLock = new KeyedMutex();

const isActive = (user: User) => user.status.status === 'active';

/** A display name from an e-mail address: the part before the @, cut to the 100 characters a name may have. */
export const displayNameOf = (email: string) => email.slice(0, email.lastIndexOf('@')).slice(0, 100) || email.slice(0, 100);

/** An active member of the caller's team, or 404 member_not_found (another team's id included). */
export async function findMember(deps: AccountDeps, team: string, id: string): Promise<User> {
  const user = await deps.store.get<User['spec'], User['status']>(userFamily.kind, team, id);
  if (!user || !isActive(user)) throw notFound('member', id);
  return user;
}

export async function activeMembers(deps: AccountDeps, team: string): Promise<User[]> {
  return (await deps.store.list<User['spec'], User['status']>(userFamily.kind, team)).filter(isActive);
}

/** Whether `caller` may manage `target`'s keys: their own, or anyone's but an owner's as an admin, anyone's as an owner. */
export function mayActFor(caller: Principal, target: User): boolean {
  if (caller.user === target.meta.id) return true;
  return atLeast(caller.role, 'admin') && (target.spec.role !== 'owner' || caller.role === 'owner');
}

function assertMayGrant(caller: Principal, role: Role): void {
  if (role === 'owner' && caller.role !== 'owner') throw forbidden('Only an owner may make another owner.');
}

function assertMayManage(caller: Principal, target: User): void {
  if (target.spec.role === 'owner' && caller.role !== 'owner') throw forbidden('Only an owner may change or remove an owner.');
}

export async function inviteMember(deps: AccountDeps, caller: Principal, invitation: Invitation): Promise<User> {
  assertMayGrant(caller, invitation.role);
  const email = invitation.email.toLowerCase();
  return teamLock.run(caller.team, async () => {
    if ((await activeMembers(deps, caller.team)).some((u) => u.spec.email.toLowerCase() === email)) {
      throw conflict('name_taken', `${invitation.email} is already a member of this team.`);
    }
    const spec = userFamily.specFromCreate(
      { name: invitation.name ?? displayNameOf(invitation.email), email: invitation.email, role: invitation.role },
      ruleContextOf(deps.config),
    );
    return await deps.writer.create(userFamily, caller.team, spec, caller.key);
  });
}

/** `precondition` judges the member found and each version the write reads (a client's If-Match). */
export async function changeRole(deps: AccountDeps, caller: Principal, id: string, role: Role, precondition?: WritePrecondition): Promise<User> {
  return teamLock.run(caller.team, async () => {
    const target = await findMember(deps, caller.team, id);
    precondition?.(target);
    assertMayManage(caller, target);
    assertMayGrant(caller, role);
    if (target.spec.role === role) return target;
    if (target.spec.role === 'owner') await assertAnotherOwner(deps, caller.team, target);
    const updated = await updateAccount<User>(deps, userFamily, caller.team, id, { role }, caller.key, precondition);
    if (role !== 'owner') await handOverTeam(deps, caller.team, target, caller.key);
    return updated;
  });
}

/**
 * Takes a member out of the team: its record stays, status removed, and its keys are
 * revoked. `precondition` judges the member found and each version the write reads.
 */
export async function removeMember(deps: AccountDeps, caller: Principal, id: string, precondition?: WritePrecondition): Promise<User> {
  return teamLock.run(caller.team, async () => {
    const target = await findMember(deps, caller.team, id);
    precondition?.(target);
    assertMayManage(caller, target);
    if (target.spec.role === 'owner') await assertAnotherOwner(deps, caller.team, target);
    const removed = await deps.writer.mutateStatus<User>(
      userFamily,
      caller.team,
      id,
      (u) => {
        precondition?.(u);
        return u.status.status === 'removed' ? null : { status: 'removed' };
      },
      caller.key,
    );
    const keys = await deps.store.list<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, caller.team);
    for (const key of keys) {
      if (key.spec.user_id === id && key.status.status === 'active') await deps.authenticator.revoke(caller.team, key.meta.id, caller.key);
    }
    await handOverTeam(deps, caller.team, target, caller.key);
    return removed;
  });
}

async function assertAnotherOwner(deps: AccountDeps, team: string, owner: User): Promise<void> {
  const owners = (await activeMembers(deps, team)).filter((u) => u.spec.role === 'owner' && u.meta.id !== owner.meta.id);
  if (owners.length === 0) throw invalidState('The team must keep an owner: make another member owner first.');
}

/** The team's owner_id (who receives its notices) moves to the longest-standing remaining owner when `leaving` held it. */
async function handOverTeam(deps: AccountDeps, team: string, leaving: User, actor: string): Promise<void> {
  const teamObject = await deps.store.get<Team['spec'], Team['status']>(teamFamily.kind, team, team);
  if (!teamObject || teamObject.spec.owner_id !== leaving.meta.id) return;
  const next = (await activeMembers(deps, team))
    .filter((u) => u.spec.role === 'owner' && u.meta.id !== leaving.meta.id)
    .sort((a, b) => a.meta.createdAt.localeCompare(b.meta.createdAt))
    .at(0);
  if (next) await updateAccount(deps, teamFamily, team, team, { owner_id: next.meta.id }, actor);
}

/**
 * Changes an account record (profile, member, team) and settles the change in the same
 * request, which emits `<family>.updated` with the caller as actor (the account
 * reconciler leaves it to the request for a moment: controllers/api-settle-grace.ts).
 * `precondition` judges each version the write reads (a client's If-Match).
 */
export async function updateAccount<R extends Resource = Resource>(
  deps: AccountDeps,
  family: AnyFamily,
  team: string,
  id: string,
  patch: Record<string, unknown>,
  actor: string,
  precondition?: WritePrecondition,
): Promise<Resource<R['spec'], R['status']>> {
  await deps.writer.mutateSpec(
    family,
    team,
    id,
    (current) => {
      if (!family.applyUpdate) throw new Error(`internal error: the update of a ${family.title} is missing (a family without one has no update route)`);
      const spec = family.applyUpdate(current.spec, patch, ruleContextOf(deps.config));
      return sameJson(spec, current.spec) ? null : spec;
    },
    actor,
    precondition,
  );
  return settleAccount<R>(deps.writer, family, team, id, actor);
}

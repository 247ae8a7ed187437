/**
 * The installation's first team, made on first start (bootstrap.ts). Its owners and
 * admins are the installation admins: they may create teams (POST /api/v1/teams). An
 * install has no other kind of administrator, so the key printed on first start (or
 * CLOUDPLANE_BOOTSTRAP_API_KEY) is the one that can make every other team.
 */
import type { Store } from '../store/types';
import type { RecordKind } from '../store/record-kinds';
import { teamFamily, Team } from '../resources/accounts';

/** Where the first start records the ids it chose, so that replicas agree on one first team. */
export const SYSTEM_TEAM = '__system';
export const BOOTSTRAP_CLAIM = 'bootstrap-team';
export const BOOTSTRAP_RECORDS: RecordKind = {
  prefix: BOOTSTRAP_CLAIM,
  sealed: false,
  keptBy: 'the first start writes it; it is kept for the life of the install',
};

/** The first team's id, or undefined while it does not exist yet. */
export async function installationTeamOf(store: Store): Promise<string | undefined> {
  const claim = await store.records.get(SYSTEM_TEAM, BOOTSTRAP_CLAIM);
  if (claim?.team_id) return (await store.get(teamFamily.kind, claim.team_id, claim.team_id)) ? claim.team_id : undefined;
  // Installs older than the claim: the first team is the oldest.
  const teams = await store.list<Team['spec'], Team['status']>(teamFamily.kind);
  return teams.sort((a, b) => a.meta.createdAt.localeCompare(b.meta.createdAt))[0]?.meta.team;
}

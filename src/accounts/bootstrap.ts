/**
 * A fresh install needs a first key without an API call: on first start the service
 * creates the first team, its owner and a key, and hands the key back once to be printed.
 * The same function creates further teams for POST /api/v1/teams and the offline
 * `cloudplane team create` command.
 */
import { AlreadyExistsError, Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { newId } from '../lib/ids';
import { teamFamily, userFamily, Team } from '../resources/accounts';
import type { ApiKeyAuthenticator } from './authenticator';
import { BOOTSTRAP_CLAIM, SYSTEM_TEAM } from './installation';
import { known } from '../lib/known';

export interface NewTeam {
  teamId: string;
  userId: string;
  keyId: string;
  /** The full API key: shown once, never stored. */
  token: string;
  /** Whether this start made the team (the install's first start), not only issued the configured key to it. */
  madeTeam?: boolean;
}

export interface TeamInput {
  teamName: string;
  ownerName: string;
  ownerEmail: string;
  /** Accept this key instead of generating one (CLOUDPLANE_BOOTSTRAP_API_KEY). */
  token?: string;
  /** Name of the owner's first key. */
  keyName?: string;
}

export async function createTeam(
  writer: ResourceWriter,
  authenticator: ApiKeyAuthenticator,
  input: TeamInput,
  ids = { teamId: newId('team'), userId: newId('usr') },
  actor = 'system',
): Promise<NewTeam> {
  const { teamId, userId } = ids;
  await createOrKeep(() => writer.create(userFamily, teamId, { name: input.ownerName, email: input.ownerEmail, role: 'owner' }, actor, userId));
  await createOrKeep(() => writer.create(teamFamily, teamId, { name: input.teamName, owner_id: userId }, actor, teamId));
  const { key, token } = await authenticator.issue(teamId, userId, input.keyName ?? 'bootstrap', actor, { token: input.token });
  return { teamId, userId, keyId: key.meta.id, token };
}

/** A record another replica (or an interrupted earlier start) already made is kept. */
async function createOrKeep(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
  }
}

/**
 * Creates the first team on first start. With a configured bootstrap key that the
 * service does not know yet, the key is added to the first team's owner. Returns what
 * was created, for printing, or null when there was nothing to do.
 *
 * Replicas starting at once on an empty cluster agree on one first team: the ids are
 * claimed with a create-only system record, and only the replica whose claim won
 * issues the key.
 */
export async function ensureBootstrap(
  store: Store,
  writer: ResourceWriter,
  authenticator: ApiKeyAuthenticator,
  configuredKey?: string,
): Promise<NewTeam | null> {
  const made = await makeFirstTeamOrKey(store, writer, authenticator, configuredKey);
  if (configuredKey) await untilAccepted(authenticator, configuredKey, ACCEPTED_WAIT_MS);
  return made;
}

/** How long a start waits for its own view of the store to accept the configured key. */
const ACCEPTED_WAIT_MS = 10_000;

/**
 * Waits until this replica accepts `token`. When another replica made the first team, its
 * user, key and their statuses reach this one by watches, one per kind, in no order
 * between kinds: a start could end with the key's secret seen and its owner's status not
 * yet, and answer the configured key 401 for a moment (seen in CI on two replicas). A key
 * that will never be accepted (revoked since) does not hold the start up for longer.
 */
async function untilAccepted(authenticator: ApiKeyAuthenticator, token: string, waitMs: number): Promise<void> {
  for (const giveUpAt = Date.now() + waitMs; !(await authenticator.knows(token)) && Date.now() < giveUpAt;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function makeFirstTeamOrKey(store: Store, writer: ResourceWriter, authenticator: ApiKeyAuthenticator, configuredKey?: string): Promise<NewTeam | null> {
  const teams = await store.list<Team['spec'], Team['status']>(teamFamily.kind);
  if (teams.length === 0) {
    const proposal = { team_id: newId('team'), user_id: newId('usr') };
    const claim = await store.records.add(SYSTEM_TEAM, BOOTSTRAP_CLAIM, proposal);
    const ids = { teamId: claim.team_id, userId: claim.user_id };
    // A claim whose team never appears was left by a start that died: take it over.
    if (claim.team_id === proposal.team_id || !(await firstTeam(store, 10_000))) {
      return { ...(await createTeam(writer, authenticator, FIRST_TEAM(configuredKey), ids)), madeTeam: true };
    }
  }
  if (configuredKey && !(await authenticator.knows(configuredKey))) {
    const first = known(await firstTeam(store, 0), 'the first team (a configured key is only issued once one exists)');
    const { key } = await authenticator.issue(first.meta.team, first.spec.owner_id, 'bootstrap', 'system', { token: configuredKey });
    return { teamId: first.meta.team, userId: first.spec.owner_id, keyId: key.meta.id, token: configuredKey };
  }
  return null;
}

const FIRST_TEAM = (token?: string): TeamInput => ({ teamName: 'My team', ownerName: 'Owner', ownerEmail: 'owner@example.com', token });

/** The oldest team, waiting up to `waitMs` for another replica to create the first one. */
async function firstTeam(store: Store, waitMs: number): Promise<Team | undefined> {
  for (let waited = 0; ; waited += 200) {
    const teams = await store.list<Team['spec'], Team['status']>(teamFamily.kind);
    if (teams.length > 0) return teams.sort((a, b) => a.meta.createdAt.localeCompare(b.meta.createdAt))[0];
    if (waited >= waitMs) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

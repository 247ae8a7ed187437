/**
 * A fresh install needs a first key without an API call: on first start the service
 * creates the first team, its owner and a key, and hands the key back once to be printed.
 * The same function creates further teams for the `cloudplane team create` command.
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { newId } from '../lib/ids';
import { teamFamily, userFamily, Team } from '../resources/accounts';
import type { ApiKeyAuthenticator } from './authenticator';

export interface NewTeam {
  teamId: string;
  userId: string;
  keyId: string;
  /** The full API key: shown once, never stored. */
  token: string;
}

export interface TeamInput {
  teamName: string;
  ownerName: string;
  ownerEmail: string;
  /** Accept this key instead of generating one (CLOUDPLANE_BOOTSTRAP_API_KEY). */
  token?: string;
}

export async function createTeam(writer: ResourceWriter, authenticator: ApiKeyAuthenticator, input: TeamInput): Promise<NewTeam> {
  const teamId = newId('team');
  const userId = newId('usr');
  const actor = 'system';
  await writer.create(userFamily, teamId, { name: input.ownerName, email: input.ownerEmail, role: 'owner' }, actor, userId);
  await writer.create(teamFamily, teamId, { name: input.teamName, owner_id: userId }, actor, teamId);
  const { key, token } = await authenticator.issue(teamId, userId, 'bootstrap', actor, input.token);
  return { teamId, userId, keyId: key.meta.id, token };
}

/**
 * Creates the first team on first start. With a configured bootstrap key that the
 * service does not know yet, the key is added to the first team's owner. Returns what
 * was created, for printing, or null when there was nothing to do.
 */
export async function ensureBootstrap(store: Store, writer: ResourceWriter, authenticator: ApiKeyAuthenticator, configuredKey?: string): Promise<NewTeam | null> {
  const teams = await store.list<Team['spec'], Team['status']>(teamFamily.kind);
  if (teams.length === 0) {
    return createTeam(writer, authenticator, { teamName: 'My team', ownerName: 'Owner', ownerEmail: 'owner@example.com', token: configuredKey });
  }
  if (configuredKey && !(await authenticator.knows(configuredKey))) {
    const first = teams.sort((a, b) => a.meta.createdAt.localeCompare(b.meta.createdAt))[0];
    const { key } = await authenticator.issue(first.meta.team, first.spec.owner_id, 'bootstrap', 'system', configuredKey);
    return { teamId: first.meta.team, userId: first.spec.owner_id, keyId: key.meta.id, token: configuredKey };
  }
  return null;
}

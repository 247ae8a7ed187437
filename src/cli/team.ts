/**
 * `cloudplane team create`: adds a team to a data directory while the service is stopped.
 * Cluster mode has no data directory to write: there teams are made through the API.
 */
import type { Config } from '../config';
import { EmbeddedStore } from '../store/embedded';
import { embeddedStoreOptions } from '../resources/store-of-record';
import { ResourceWriter } from '../resources/writer';
import { ApiKeyAuthenticator } from '../accounts/authenticator';
import { createTeam, NewTeam } from '../accounts/bootstrap';
import { displayNameOf } from '../accounts/members';

export async function createTeamOffline(config: Config, name: string, ownerEmail: string): Promise<NewTeam> {
  if (config.kubernetes) {
    throw new Error(
      'team create works on the embedded store only; with CLOUDPLANE_STORE=kubernetes an installation admin creates teams with POST /api/v1/teams (docs/api.md, Teams)',
    );
  }
  const store = new EmbeddedStore(embeddedStoreOptions(config));
  await store.start();
  try {
    const writer = new ResourceWriter(store);
    const authenticator = new ApiKeyAuthenticator(store, writer);
    await authenticator.start();
    return await createTeam(writer, authenticator, { teamName: name, ownerName: displayNameOf(ownerEmail), ownerEmail });
  } finally {
    await store.stop();
  }
}

/** Account settings: teams, their members (users) and API keys. */
import { apiKeyFamily, teamFamily, userFamily } from '../resources/accounts';
import { accountReconcilers } from '../accounts/reconciler';
import { SECRET_PREFIX as API_KEY_SECRET_PREFIX } from '../accounts/authenticator';
import { registerSettingsRoutes } from '../api/routes/settings';
import { registerTeamRoutes } from '../api/routes/teams';
import { familyModule } from './module';

export const accountsModule = familyModule({
  families: [teamFamily, userFamily, apiKeyFamily],
  // Accounts settle what kubectl changed; one made with kubectl is not taken in (accounts/reconciler.ts).
  reconcilers: (deps) => accountReconcilers(deps.store, deps.writer),
  records: [
    // An API key's hash, named after the hash, with the key's id inside; a revoked key is refused anyway.
    {
      prefix: API_KEY_SECRET_PREFIX,
      sealed: true,
      owner: (secret) => (secret.data.key_id ? { kind: apiKeyFamily.kind, id: secret.data.key_id } : null),
      needs: (key) => key.status.status !== 'revoked',
    },
  ],
  routes: (app, ctx) => {
    registerSettingsRoutes(app, ctx);
    // After settings, so that GET /api/v1/settings/team names the Team schema (openapi-components.ts).
    registerTeamRoutes(app, ctx);
  },
});

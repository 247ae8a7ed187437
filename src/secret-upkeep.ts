/**
 * Which secrets the service keeps, and who keeps each kind: the rules of the leader's
 * secret sweep (controllers/secret-sweeper.ts). The secrets are named by modules of every
 * layer (resources, webhooks, accounts, usage, the API's Idempotency-Key records), so the
 * rules are gathered here, at the composition root, and handed to the sweeper by service.ts.
 */
import type { StoredSecret } from './store/types';
import { families } from './resources/registry';
import { webhookFamily, webhookSecretName } from './resources/webhook';
import { apiKeyFamily } from './resources/accounts';
import { SECRET_PREFIX as API_KEY_SECRET_PREFIX } from './accounts/authenticator';
import { SESSION_SECRET_PREFIX } from './accounts/sessions';
import { dropExpiredPrevious } from './webhooks/secrets';
import { LISTENER_SECRET_PREFIX } from './webhooks/listener';
import { IDEMPOTENCY_SECRET_PREFIX, lapsed as idempotencyRecordLapsed } from './api/plugins/idempotency';
import { USAGE_SECRET_PREFIX } from './usage/records';
import type { SecretOwnership, SecretSweepRules } from './controllers/secret-sweeper';

const named = (kind: string, prefix: string) => (secret: StoredSecret) => ({ kind, id: secret.name.slice(prefix.length) });

/**
 * Every secret a resource owns. The system team's secrets (the cursor-signing key, the
 * bootstrap claim) belong to no resource and match no rule, so they are never swept.
 */
export const SECRET_OWNERSHIP: SecretOwnership[] = [
  // A family's write-only secret (a VPN pre-shared key), named after the resource's id.
  ...families.flatMap((family) => {
    if (!family.secret) return [];
    const prefix = family.secret.secretName('');
    return [{ prefix, owner: named(family.kind, prefix) }];
  }),
  // A subscription's signing secrets; a deleted subscription signs nothing.
  { prefix: webhookSecretName(''), owner: named(webhookFamily.kind, webhookSecretName('')), needs: (hook) => hook.status?.status !== 'deleted' },
  // A listener's lease (`cloudplane listen`); a deleted listener has none.
  { prefix: LISTENER_SECRET_PREFIX, owner: named(webhookFamily.kind, LISTENER_SECRET_PREFIX), needs: (hook) => hook.status?.status !== 'deleted' },
  // An API key's hash, named after the hash, with the key's id inside; a revoked key is refused anyway.
  {
    prefix: API_KEY_SECRET_PREFIX,
    owner: (secret) => (secret.data.key_id ? { kind: apiKeyFamily.kind, id: secret.data.key_id } : null),
    needs: (key) => key.status?.status !== 'revoked',
  },
];

/**
 * Team secrets that belong to no resource, each kind expired by the module that keeps it;
 * no ownership rule names them, so the orphan sweep leaves them alone. Every team secret is
 * either owned (above) or kept here (test/api/secret-upkeep.test.ts), so a new kind of
 * secret cannot be forgotten and grow for ever.
 */
export const SECRETS_KEPT_ELSEWHERE: ReadonlyArray<{ prefix: string; upkeep: string }> = [
  { prefix: SESSION_SECRET_PREFIX, upkeep: 'accounts/sessions.ts removes a session past its idle or absolute expiry' },
  { prefix: IDEMPOTENCY_SECRET_PREFIX, upkeep: 'the secret sweep (controllers/secret-sweeper.ts) removes a record past CLOUDPLANE_IDEMPOTENCY_TTL_SECONDS' },
  { prefix: USAGE_SECRET_PREFIX, upkeep: 'usage/retention.ts removes records past CLOUDPLANE_USAGE_RETENTION_DAYS' },
];

/** What the sweeper is handed: the ownership above, webhook secrets' previous values, expired Idempotency-Key records. */
export const SECRET_SWEEP_RULES: SecretSweepRules = {
  ownership: SECRET_OWNERSHIP,
  previous: { prefix: webhookSecretName(''), drop: dropExpiredPrevious },
  expiring: { prefix: IDEMPOTENCY_SECRET_PREFIX, lapsed: idempotencyRecordLapsed },
};

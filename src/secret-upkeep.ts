/**
 * Which secrets the service keeps, and who keeps each kind: the rules of the leader's
 * secret sweep (controllers/secret-sweeper.ts). Those a resource owns come from the family
 * definitions and modules; the rest are named by modules of several layers (accounts'
 * sessions, usage records, the API's Idempotency-Key records), so the rules are gathered
 * here, at the composition root, and handed to the sweeper by service.ts.
 */
import { families } from './resources/registry';
import { webhookSecretName } from './resources/webhook';
import { FAMILY_MODULES } from './families';
import { SESSION_SECRET_PREFIX } from './accounts/sessions';
import { dropExpiredPrevious } from './webhooks/secrets';
import { IDEMPOTENCY_SECRET_PREFIX, lapsed as idempotencyRecordLapsed } from './api/plugins/idempotency';
import { USAGE_SECRET_PREFIX } from './usage/records';
import { ownedByName, SecretOwnership, SecretSweepRules } from './controllers/secret-sweeper';

/**
 * Every secret a resource owns: a family's write-only secret (a VPN pre-shared key), named
 * after the resource's id, and what each family module declares (webhook signing secrets
 * and listener leases, API key hashes). The system team's secrets (the cursor-signing key,
 * the bootstrap claim) belong to no resource and match no rule, so they are never swept.
 */
export const SECRET_OWNERSHIP: SecretOwnership[] = [
  ...families.flatMap((family) => {
    if (!family.secret) return [];
    const prefix = family.secret.secretName('');
    return [{ prefix, owner: ownedByName(family.kind, prefix) }];
  }),
  ...FAMILY_MODULES.flatMap((module) => module.secrets),
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

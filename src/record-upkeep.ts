/**
 * Every kind of secret and record the service keeps beside its resources
 * (store/record-kinds.ts), gathered from the modules that keep them: the families' own (a
 * family's write-only secret, and what each family module declares) and those of modules
 * of several layers (accounts' sessions and bootstrap claim, usage records, the API's
 * Idempotency-Key records). service.ts hands them to the leader's sweep
 * (controllers/record-sweeper.ts) and to the start-up move of records out of secrets
 * (store/records-out-of-secrets.ts).
 */
import { families } from './resources/registry';
import { webhookSecretName } from './resources/webhook';
import { FAMILY_MODULES } from './families';
import { SESSION_RECORDS } from './accounts/sessions';
import { BOOTSTRAP_RECORDS } from './accounts/installation';
import { dropExpiredPrevious } from './webhooks/secrets';
import { IDEMPOTENCY_RECORDS } from './api/plugins/idempotency';
import { USAGE_RECORDS } from './usage/records';
import { SIMULATION_FAULT_RECORDS } from './drivers/simulated/faults';
import { ownedByName, RecordKind } from './store/record-kinds';
import type { RecordSweepRules } from './controllers/record-sweeper';

/**
 * Every kind: each is owned by a resource, expires, or names the module that removes its
 * entries (test/api/secret-upkeep.test.ts holds every stored entry to one of them), so a
 * new kind cannot be forgotten and grow for ever. The system team's cursor-signing key
 * belongs to no resource and is kept for the life of the install.
 */
export const RECORD_KINDS: readonly RecordKind[] = [
  // A family's write-only secret (a VPN pre-shared key), named after the resource's id.
  ...families.flatMap((family): RecordKind[] => {
    if (!family.secret) return [];
    const prefix = family.secret.secretName('');
    return [{ prefix, sealed: true, owner: ownedByName(family.kind, prefix) }];
  }),
  ...FAMILY_MODULES.flatMap((module) => module.records),
  SESSION_RECORDS,
  USAGE_RECORDS,
  BOOTSTRAP_RECORDS,
  IDEMPOTENCY_RECORDS,
  SIMULATION_FAULT_RECORDS,
];

/** What the sweeper is handed: the kinds above, and webhook secrets' previous values. */
export const RECORD_SWEEP_RULES: RecordSweepRules = {
  kinds: RECORD_KINDS,
  previous: { prefix: webhookSecretName(''), drop: dropExpiredPrevious },
};

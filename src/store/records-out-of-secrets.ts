/**
 * Installs made before the store kept records apart from secrets kept usage records,
 * listener leases, sessions and the bootstrap claim as secrets (Secrets in Kubernetes).
 * Each start moves what it finds of those kinds: written as a record unless one is there
 * already (another replica may have moved it first), then its secret removed. Every
 * replica may run it at once; a start that dies half way leaves the rest for the next.
 */
import type { Store } from './types';
import type { RecordKind } from './record-kinds';
import { BACKGROUND_TURN_BUDGET_MS, yieldIfDue } from '../lib/event-loop-turns';

/** Moves the unsealed kinds' entries out of the secrets; answers how many it moved. */
export async function moveRecordsOutOfSecrets(store: Pick<Store, 'secrets' | 'records'>, kinds: readonly RecordKind[]): Promise<number> {
  let moved = 0;
  for (const kind of kinds) {
    if (kind.sealed) continue;
    for (const secret of await store.secrets.list(kind.prefix)) {
      await yieldIfDue(BACKGROUND_TURN_BUDGET_MS);
      await store.records.add(secret.team, secret.name, secret.data);
      await store.secrets.delete(secret.team, secret.name);
      moved++;
    }
  }
  return moved;
}

/**
 * `cloudplane listen`: a listener is a webhook subscription whose deliveries reach the CLI
 * over a stream the CLI holds open (GET /webhooks/{id}/stream) instead of an HTTP POST the
 * service makes, so a laptop behind NAT, and a local receiver the target guard would
 * refuse, get them all the same. Its URL, `listen:<forward-to>`, only says so: nothing is
 * ever POSTed to it (the sender refuses any scheme but http(s), kubectl-made subscriptions
 * are judged by the create rules, which refuse it too).
 *
 * Its lease lives in the store record `webhook-listener-<id>` (every replica reads it; no
 * resource write, so no watch traffic): the replica holding the stream renews it; the
 * subscription reconciler on the leader deletes the listener once it lapses.
 */
import type { Store } from '../store/types';
import type { Webhook } from '../resources/webhook';

const SCHEME = 'listen:';
export const LISTENER_RECORD_PREFIX = 'webhook-listener-';
export const leaseRecordName = (id: string) => `${LISTENER_RECORD_PREFIX}${id}`;

export const listenerUrl = (forwardTo: string | undefined) => `${SCHEME}${forwardTo ?? 'cli'}`;
export const isListener = (webhook: Pick<Webhook, 'spec'>) => webhook.spec.url.startsWith(SCHEME);

const RENEW_SWAPS = 5;
const RENEW_SWAP_PAUSE_MS = 50;

interface Lease {
  /** The stream that renews it; '' before a CLI has attached. */
  holder: string;
  /** Epoch milliseconds, as a string. */
  expires_at: string;
}

export async function leaseExpiry(store: Store, team: string, id: string): Promise<number> {
  const lease = await store.records.get(team, leaseRecordName(id));
  return lease ? Number(lease.expires_at) : 0;
}

/** Gives the lease to `holder` (a new stream takes it over from an old one). */
export async function claimLease(store: Store, team: string, id: string, holder: string, leaseMs: number): Promise<void> {
  const lease: Lease = { holder, expires_at: String(Date.now() + leaseMs) };
  await store.records.put(team, leaseRecordName(id), { ...lease });
}

/**
 * Renews the lease while `holder` has it: `lost` once another stream took it over (or it is
 * gone), `contended` when the swap kept failing (in cluster mode a replica reads records from
 * a cache that may lag its own last write): this renewal is skipped, the next one tries again.
 */
export async function renewLease(store: Store, team: string, id: string, holder: string, leaseMs: number): Promise<'renewed' | 'lost' | 'contended'> {
  for (let attempt = 0; attempt < RENEW_SWAPS; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, RENEW_SWAP_PAUSE_MS));
    const current = await store.records.get(team, leaseRecordName(id));
    if (!current || current.holder !== holder) return 'lost';
    const renewed: Lease = { holder, expires_at: String(Date.now() + leaseMs) };
    // A swap: a takeover written between the read and this write is never overwritten.
    if (await store.records.swap(team, leaseRecordName(id), { ...current }, { ...renewed })) return 'renewed';
  }
  return 'contended';
}

export function deleteLease(store: Store, team: string, id: string): Promise<void> {
  return store.records.delete(team, leaseRecordName(id));
}

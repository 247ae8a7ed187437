/**
 * The signing secrets of a subscription, in the store secret `webhook-secret-<id>`:
 * the current one, and after a rotation the previous one until its overlap ends, so
 * receivers can switch over without rejecting a delivery. Once the overlap has ended the
 * leader's sweep (controllers/record-sweeper.ts) drops the previous one.
 */
import type { Store } from '../store/types';
import { webhookSecretName } from '../resources/webhook';
import { newWebhookSecret } from './signing';

interface StoredEntrys {
  current: string;
  previous: string;
  /** Epoch milliseconds, as a string; '' without a previous secret. */
  previous_expires_at: string;
}

/** Makes and keeps a first secret; returns it (to be shown once). */
export async function createSecret(store: Store, team: string, webhookId: string): Promise<string> {
  const current = newWebhookSecret();
  const data: StoredEntrys = { current, previous: '', previous_expires_at: '' };
  await store.secrets.put(team, webhookSecretName(webhookId), { ...data });
  return current;
}

/** Makes a first secret unless the subscription has one (kept as it is). */
export async function ensureSecret(store: Store, team: string, webhookId: string): Promise<void> {
  if (await store.secrets.get(team, webhookSecretName(webhookId))) return;
  const data: StoredEntrys = { current: newWebhookSecret(), previous: '', previous_expires_at: '' };
  await store.secrets.add(team, webhookSecretName(webhookId), { ...data });
}

/**
 * Replaces the current secret; the old one keeps signing for `overlapMs`. Returns the new
 * one. The write is a swap over what was read, so rotations at once (or the dropping of an
 * expired previous secret) never overwrite each other: each is kept as current or previous.
 */
export async function rotateSecret(store: Store, team: string, webhookId: string, overlapMs: number, now = Date.now()): Promise<string> {
  const name = webhookSecretName(webhookId);
  const current = newWebhookSecret();
  for (;;) {
    const existing = await store.secrets.get(team, name);
    const data: StoredEntrys =
      existing?.current && overlapMs > 0
        ? { current, previous: existing.current, previous_expires_at: String(now + overlapMs) }
        : { current, previous: '', previous_expires_at: '' };
    if (!existing) {
      await store.secrets.put(team, name, { ...data });
      return current;
    }
    if (await store.secrets.swap(team, name, { ...existing }, { ...data })) return current;
  }
}

/**
 * Drops the previous secret of `secret` (a `webhook-secret-<id>` as listed) once its
 * overlap has ended: it stopped signing then, and is not kept a moment longer than the
 * next sweep. Returns whether it dropped one; a rotation since the listing wins.
 */
export async function dropExpiredPrevious(
  store: Store,
  secret: { team: string; name: string; data: Record<string, string> },
  now = Date.now(),
): Promise<boolean> {
  const { current, previous, previous_expires_at } = secret.data;
  if (!previous || Number(previous_expires_at) > now) return false;
  const next: StoredEntrys = { current, previous: '', previous_expires_at: '' };
  return store.secrets.swap(secret.team, secret.name, secret.data, { ...next });
}

/** Every secret that signs a delivery now, the current one first. */
export async function signingSecrets(store: Store, team: string, webhookId: string, now = Date.now()): Promise<string[]> {
  const data = await store.secrets.get(team, webhookSecretName(webhookId));
  if (!data?.current) return [];
  const previousLive = data.previous && Number(data.previous_expires_at) > now;
  return previousLive ? [data.current, data.previous] : [data.current];
}

export function deleteSecret(store: Store, team: string, webhookId: string): Promise<void> {
  return store.secrets.delete(team, webhookSecretName(webhookId));
}

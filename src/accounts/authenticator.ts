/**
 * API keys: issued as `cpk_<40 base62>`, shown once, kept only as a SHA-256 hash in a
 * secret named after the hash, and checked on every request against the key's record,
 * so a revoked key is refused on the very next request.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { apiKeyFamily, ApiKey } from '../resources/accounts';
import { newApiKeySecret } from '../lib/ids';
import { nowIso } from '../lib/time';
import { notFound } from '../lib/errors';
import { ExpiringSet } from '../lib/expiring-set';
import type { Principal } from '../api/context';

const KEY_FORMAT = /^cpk_[0-9A-Za-z]{32,}$/;
export const SECRET_PREFIX = 'apikey-';

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');
/** Secret name derived from the hash, so a key is found without scanning. */
const secretNameOf = (hash: string) => `${SECRET_PREFIX}${hash.slice(0, 40)}`;

interface KeyEntry {
  team: string;
  keyId: string;
  hash: string;
}

/**
 * Hashes the store did not know, so a client repeating an unknown key (or an attacker
 * guessing) does not scan the store's secrets on every request. Bounded in size; the short
 * life only matters in cluster mode, where a key made on another replica a moment before
 * its Secret reached this replica's cache could otherwise be refused for longer.
 */
const UNKNOWN_KEYS_CACHED = 10_000;
const UNKNOWN_KEY_TTL_MS = 5_000;

export class ApiKeyAuthenticator {
  private readonly byHash = new Map<string, KeyEntry>();
  private readonly unknown = new ExpiringSet(UNKNOWN_KEYS_CACHED, UNKNOWN_KEY_TTL_MS);

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
  ) {}

  async start(): Promise<void> {
    for (const secret of await this.store.listSecrets(SECRET_PREFIX)) {
      this.byHash.set(secret.data.hash, { team: secret.team, keyId: secret.data.key_id, hash: secret.data.hash });
    }
  }

  /** The caller behind a bearer token, or null for a malformed, unknown or revoked key. */
  async authenticate(token: string): Promise<Principal | null> {
    if (!KEY_FORMAT.test(token)) return null;
    const hash = hashOf(token);
    const entry = this.byHash.get(hash) ?? (this.unknown.has(hash) ? undefined : await this.lookup(hash));
    if (!entry || !timingSafeEqual(Buffer.from(entry.hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
    const key = await this.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, entry.team, entry.keyId);
    if (!key || key.status.status !== 'active') return null;
    return { team: entry.team, user: key.spec.user_id, key: key.meta.id };
  }

  /** Creates a key for `user`; the returned token is never stored and cannot be shown again. */
  async issue(team: string, user: string, name: string, actor: string, token = newApiKeySecret()): Promise<{ key: ApiKey; token: string }> {
    if (!KEY_FORMAT.test(token)) throw new Error('an API key must look like cpk_ followed by at least 32 letters and digits');
    const hash = hashOf(token);
    const spec = apiKeyFamily.specFromCreate({ name, user_id: user, prefix: token.slice(0, 8) }, undefined as never);
    const key = (await this.writer.create(apiKeyFamily, team, spec, actor)) as ApiKey;
    await this.store.putSecret(team, secretNameOf(hash), { hash, key_id: key.meta.id });
    this.byHash.set(hash, { team, keyId: key.meta.id, hash });
    this.unknown.delete(hash);
    return { key, token };
  }

  async revoke(team: string, keyId: string, actor: string): Promise<ApiKey> {
    const key = await this.writer.mutateStatus<ApiKey>(
      apiKeyFamily,
      team,
      keyId,
      (current) => (current.status.status === 'revoked' ? null : { status: 'revoked', revoked_at: nowIso() }),
      actor,
    );
    for (const [hash, entry] of this.byHash) {
      if (entry.keyId === keyId && entry.team === team) {
        this.byHash.delete(hash);
        await this.store.deleteSecret(team, secretNameOf(hash));
      }
    }
    return key;
  }

  /** Whether a token is already a key of the service (for a configured bootstrap key). */
  async knows(token: string): Promise<boolean> {
    return (await this.authenticate(token)) !== null;
  }

  private async lookup(hash: string): Promise<KeyEntry | undefined> {
    const [secret] = await this.store.listSecrets(secretNameOf(hash));
    if (!secret) {
      this.unknown.add(hash);
      return undefined;
    }
    const entry = { team: secret.team, keyId: secret.data.key_id, hash: secret.data.hash };
    this.byHash.set(hash, entry);
    return entry;
  }
}

export async function findApiKey(store: Store, team: string, id: string): Promise<ApiKey> {
  const key = await store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, id);
  if (!key || key.status.status === 'revoked') throw notFound('api_key', id);
  return key;
}

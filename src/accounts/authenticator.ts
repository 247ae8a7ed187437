/**
 * API keys: issued as `cpk_<40 base62>`, shown once, kept only as a SHA-256 hash in a
 * secret named after the hash, and checked on every request against the key's record
 * and its user's, so a revoked or expired key, or one of a removed member, is refused on
 * the very next request, and a changed role applies from the next request on.
 */
import { hash as digest, timingSafeEqual } from 'node:crypto';
import { AlreadyExistsError, ConflictError, Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { apiKeyFamily, userFamily, ApiKey, KeyScope, User } from '../resources/accounts';
import { derivedId, newApiKeySecret } from '../lib/ids';
import { nowIso } from '../lib/time';
import { notFound } from '../lib/errors';
import { ExpiringSet } from '../lib/expiring-set';
import { hasPassed } from '../lib/timestamps';
import { atLeast, Principal } from './roles';
import { installationTeamOf } from './installation';

const KEY_FORMAT = /^cpk_[0-9A-Za-z]{32,}$/;
export const SECRET_PREFIX = 'apikey-';

/** One-shot hashing: no Hash object per request (this runs on every authenticated request). */
const hashOf = (token: string) => digest('sha256', token, 'hex');
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

/**
 * last_used_at is kept to the minute. Writing it on every request would turn every read
 * into a store write (in cluster mode an API server write, an etcd revision and a watch
 * event to every replica), doubling the load of a busy key and racing its other writes;
 * once a minute per key is as precise as "when was this key last used" needs.
 */
const LAST_USED_RESOLUTION_MS = 60_000;
const LAST_USED_WRITE_ATTEMPTS = 3;
/** How long an issue waits to see a key another replica created under the same derived id. */
const SEEN_WAIT_MS = 10_000;

export interface NewKeyOptions {
  scope?: KeyScope;
  expiresAt?: string | null;
  /** Accept this key instead of generating one (a configured bootstrap key). */
  token?: string;
  /** The key's id, when the caller needs it before the key exists (to claim its quota place). */
  id?: string;
}

export class ApiKeyAuthenticator {
  private readonly byHash = new Map<string, KeyEntry>();
  private readonly unknown = new ExpiringSet(UNKNOWN_KEYS_CACHED, UNKNOWN_KEY_TTL_MS);
  /** When this replica last wrote each key's last_used_at (ms). */
  private readonly lastWritten = new Map<string, number>();
  private installationTeam: string | undefined;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
  ) {}

  async start(): Promise<void> {
    for (const secret of await this.store.secrets.list(SECRET_PREFIX)) {
      this.byHash.set(secret.data.hash, { team: secret.team, keyId: secret.data.key_id, hash: secret.data.hash });
    }
  }

  /**
   * The caller behind a bearer token, or null for a malformed, unknown, revoked or
   * expired key, or a key whose user was removed: all are refused alike, with 401.
   * Answered at once for a key this replica knows (every request of a busy client), as a
   * promise when the key must be looked up first.
   */
  authenticate(token: string): Principal | null | Promise<Principal | null> {
    if (!KEY_FORMAT.test(token)) return null;
    const hash = hashOf(token);
    // byHash holds an entry only under its own full hash (lookup checks a secret found by the hash's prefix).
    const entry = this.byHash.get(hash);
    if (entry) return this.principalOf(entry);
    if (this.unknown.has(hash)) return null;
    return this.lookup(hash).then((found) => (found ? this.principalOf(found) : null));
  }

  /** The caller of a known key, from its key and user records as they are now. */
  private principalOf(entry: KeyEntry): Principal | null | Promise<Principal | null> {
    const key = this.store.peek<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, entry.team, entry.keyId);
    if (!key || key.status.status !== 'active') return null;
    if (key.spec.expires_at && hasPassed(key.spec.expires_at)) return null;
    const user = this.store.peek<User['spec'], User['status']>(userFamily.kind, entry.team, key.spec.user_id);
    if (!user || user.status.status !== 'active') return null;
    this.noteUse(key);
    const role = user.spec.role;
    const principal = (installationTeam: string | undefined): Principal => ({
      team: entry.team,
      user: user.meta.id,
      key: key.meta.id,
      role,
      scope: key.spec.scope ?? 'read_write',
      installationAdmin: atLeast(role, 'admin') && entry.team === installationTeam,
    });
    // The installation's team is read once; an admin's first request may wait for it.
    if (!atLeast(role, 'admin') || this.installationTeam !== undefined) return principal(this.installationTeam);
    return this.installationTeamId().then(principal);
  }

  /** Creates a key for `user`; the returned token is never stored and cannot be shown again. */
  async issue(team: string, user: string, name: string, actor: string, options: NewKeyOptions = {}): Promise<{ key: ApiKey; token: string }> {
    const token = options.token ?? newApiKeySecret();
    if (!KEY_FORMAT.test(token)) throw new Error('an API key must look like cpk_ followed by at least 32 letters and digits');
    const hash = hashOf(token);
    const body = { name, user_id: user, prefix: token.slice(0, 8), scope: options.scope, expires_at: options.expiresAt };
    const spec = apiKeyFamily.specFromCreate(body, undefined as never);
    // A configured key (CLOUDPLANE_BOOTSTRAP_API_KEY) gets an id derived from its hash:
    // replicas starting at once each issue it, and must make one key, not one each (two
    // records for one token split its idempotency records and rate limit between replicas).
    const id = options.token === undefined ? options.id : derivedId(apiKeyFamily.idPrefix, 'configured-key', hash);
    let key: ApiKey;
    try {
      key = (await this.writer.create(apiKeyFamily, team, spec, actor, id)) as ApiKey;
    } catch (err) {
      const made = id && err instanceof AlreadyExistsError ? await this.untilSeen(team, id, SEEN_WAIT_MS) : undefined;
      if (!made) throw err;
      key = made;
    }
    await this.store.secrets.put(team, secretNameOf(hash), { hash, key_id: key.meta.id });
    this.byHash.set(hash, { team, keyId: key.meta.id, hash });
    this.unknown.delete(hash);
    return { key, token };
  }

  /**
   * The key another replica created, once this one's watch has brought it: its create is
   * refused at once, while the record reaches this cache moments later.
   */
  private async untilSeen(team: string, id: string, waitMs: number): Promise<ApiKey | undefined> {
    for (const giveUpAt = Date.now() + waitMs; ;) {
      const key = await this.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, id);
      if (key || Date.now() >= giveUpAt) return key;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async revoke(team: string, keyId: string, actor: string): Promise<ApiKey> {
    const key = await this.writer.mutateStatus<ApiKey>(
      apiKeyFamily,
      team,
      keyId,
      (current) => (current.status.status === 'revoked' ? null : { status: 'revoked', revoked_at: nowIso() }),
      actor,
    );
    this.lastWritten.delete(keyId);
    for (const [hash, entry] of this.byHash) {
      if (entry.keyId === keyId && entry.team === team) {
        this.byHash.delete(hash);
        await this.store.secrets.delete(team, secretNameOf(hash));
      }
    }
    return key;
  }

  /** Whether a token is already a key of the service (for a configured bootstrap key). */
  async knows(token: string): Promise<boolean> {
    return (await this.authenticate(token)) !== null;
  }

  /**
   * Records the key's use, at most once a minute per key (LAST_USED_RESOLUTION_MS), and
   * without the request waiting: the answer does not depend on it, and a store that
   * cannot take the write loses nothing but one minute's precision.
   */
  private noteUse(key: ApiKey): void {
    const now = Date.now();
    // This replica's own last write answers most requests without parsing a date.
    if (now - (this.lastWritten.get(key.meta.id) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    const lastKnown = Math.max(Date.parse(key.status.last_used_at ?? '') || 0, this.lastWritten.get(key.meta.id) ?? 0);
    if (now - lastKnown < LAST_USED_RESOLUTION_MS) return;
    this.lastWritten.set(key.meta.id, now);
    // A write that fails (the store is down) is tried again a minute later, not on every request meanwhile.
    this.writeLastUsed(key.meta.team, key.meta.id, new Date(now).toISOString()).catch(() => undefined);
  }

  /** Writes last_used_at on the latest version of the key, again when another writer got there first. */
  private async writeLastUsed(team: string, id: string, usedAt: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const latest = await this.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, id);
      if (!latest || latest.status.status !== 'active') return;
      try {
        await this.store.updateStatus({ ...latest, status: { ...latest.status, last_used_at: usedAt } });
        return;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= LAST_USED_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  /** The installation's first team, whose owners and admins are installation admins; it never changes once known. */
  private async installationTeamId(): Promise<string | undefined> {
    this.installationTeam ??= await installationTeamOf(this.store);
    return this.installationTeam;
  }

  private async lookup(hash: string): Promise<KeyEntry | undefined> {
    const secret = (await this.store.secrets.list(secretNameOf(hash))).at(0);
    // The secret is named after the hash's first 40 digits: the full hash must match too.
    if (!secret || !sameHash(secret.data.hash, hash)) {
      this.unknown.add(hash);
      return undefined;
    }
    const entry = { team: secret.team, keyId: secret.data.key_id, hash: secret.data.hash };
    this.byHash.set(hash, entry);
    return entry;
  }
}

function sameHash(stored: string | undefined, hash: string): boolean {
  return typeof stored === 'string' && stored.length === hash.length && timingSafeEqual(Buffer.from(stored, 'hex'), Buffer.from(hash, 'hex'));
}

export async function findApiKey(store: Store, team: string, id: string): Promise<ApiKey> {
  const key = await store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, id);
  if (!key || key.status.status === 'revoked') throw notFound('api_key', id);
  return key;
}

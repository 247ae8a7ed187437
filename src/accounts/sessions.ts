/**
 * Console sessions: what a signed-in person's browser holds instead of an API key.
 *
 * The browser gets an opaque token (`cps_<43 base64url>`) in an HttpOnly cookie; the store
 * keeps only its SHA-256 hash, in a record named after the hash (as API keys are kept), in
 * the namespace of the team the person signed in to. Every request re-reads the session
 * and its user (and, for a session made from an API key, the key), so sign-out, a removed
 * member, a revoked key or a changed role apply on the very next request, on any replica.
 *
 * A session ends `maxAgeMs` after sign-in, or once unused for `idleTimeoutMs`. Last use is
 * written to the store at most once per resolution (a minute, less for short timeouts),
 * like an API key's last_used_at; this replica also remembers it to the millisecond.
 *
 * The CSRF token is an HMAC of the session token: bound to the session, nothing to store,
 * and useless without the cookie it was derived from.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../store/types';
import type { RecordKind } from '../store/record-kinds';
import type { SessionConfig } from '../config';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, KEY_SCOPES, KeyScope, Role, Team, User } from '../resources/accounts';
import { ExpiringSet } from '../lib/expiring-set';
import { hasPassed } from '../lib/timestamps';
import { ApiError, forbidden, notFound } from '../lib/errors';
import { textOf } from '../lib/unknown-values';
import { atLeast, Principal } from './roles';
import { installationTeamOf } from './installation';

export const SESSION_COOKIE = 'cloudplane_session';
export const SESSION_RECORD_PREFIX = 'session-';
/** Not sealed: a session's record holds its token's hash, never the token. */
export const SESSION_RECORDS: RecordKind = {
  prefix: SESSION_RECORD_PREFIX,
  sealed: false,
  keptBy: 'accounts/sessions.ts removes a session past its idle or absolute expiry',
};

const TOKEN_FORMAT = /^cps_[0-9A-Za-z_-]{43}$/;
const CSRF_CONTEXT = 'cloudplane csrf token v1';

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');
/** Record name derived from the hash, so a session is found without scanning. */
const recordNameOf = (hash: string) => `${SESSION_RECORD_PREFIX}${hash.slice(0, 40)}`;

/** How the session was made: through the identity provider, or by exchanging an API key. */
export type SessionOrigin = 'oidc' | 'api_key';

/** What the store keeps of a session (all strings: a record's data). */
interface SessionRecord {
  hash: string;
  via: SessionOrigin;
  /** The person's e-mail as the provider vouched for it; it finds their other teams. */
  email: string;
  /** The team and user the session acts as now (PUT /api/v1/session changes them). */
  team: string;
  user: string;
  scope: KeyScope;
  /** The key a session made from an API key depends on. */
  key_id?: string;
  created_at: string;
  expires_at: string;
  last_seen_at: string;
}

const ORIGINS: readonly string[] = ['oidc', 'api_key'] satisfies SessionOrigin[];
const SCOPES: readonly string[] = KEY_SCOPES;
const STRING_FIELDS = ['hash', 'email', 'team', 'user', 'created_at', 'expires_at', 'last_seen_at'] as const;

/** Whether a record's data is a session's: every field there, origin and scope ones the service knows. */
function isSessionRecord(data: Record<string, string> | undefined): data is Record<string, string> & SessionRecord {
  return data !== undefined && ORIGINS.includes(data.via) && SCOPES.includes(data.scope) && STRING_FIELDS.every((field) => typeof data[field] === 'string');
}

/** An authenticated session: who it acts as, and what the session view shows. */
export interface ActiveSession {
  principal: Principal;
  record: Readonly<SessionRecord>;
  /** The record's team (where the session is kept), which a team switch does not move. */
  home: string;
  token: string;
  user: User;
  idleExpiresAt: string;
}

export interface TeamChoice {
  id: string;
  name: string;
  role: Role;
}

const UNKNOWN_CACHED = 10_000;
const UNKNOWN_TTL_MS = 5_000;
const LAST_SEEN_MAX_RESOLUTION_MS = 60_000;
/** How often expired sessions are removed from the store. */
const SWEEP_MAX_INTERVAL_MS = 10 * 60_000;

export class SessionManager {
  private readonly homeOf = new Map<string, string>();
  private readonly unknown = new ExpiringSet(UNKNOWN_CACHED, UNKNOWN_TTL_MS);
  /** When this replica last saw each session used (ms), by hash. */
  private readonly lastSeen = new Map<string, number>();
  private readonly lastSeenResolutionMs: number;
  private sweepTimer: NodeJS.Timeout | null = null;
  private installationTeam: string | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: SessionConfig,
    private readonly logger: Logger,
  ) {
    // A tenth of the idle timeout at most, so a replica that did not see the last use judges idleness nearly as well.
    this.lastSeenResolutionMs = Math.min(LAST_SEEN_MAX_RESOLUTION_MS, Math.max(1, Math.floor(config.idleTimeoutMs / 10)));
  }

  start(): void {
    const interval = Math.min(SWEEP_MAX_INTERVAL_MS, Math.max(1000, this.config.idleTimeoutMs));
    this.sweepTimer = setInterval(() => {
      this.removeExpired().catch((err: unknown) => {
        this.logger.warn({ err: textOf(err) }, 'could not remove expired sessions; trying again later');
      });
    }, interval);
    this.sweepTimer.unref();
  }

  stop(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }

  /** Starts a session as `user` of `team`; returns the token for the cookie, never stored. */
  async create(team: string, user: User, via: SessionOrigin, scope: KeyScope, keyId?: string): Promise<string> {
    const token = `cps_${randomBytes(32).toString('base64url')}`;
    const hash = hashOf(token);
    const now = Date.now();
    const record: SessionRecord = {
      hash,
      via,
      email: user.spec.email,
      team,
      user: user.meta.id,
      scope,
      ...(keyId ? { key_id: keyId } : {}),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.config.maxAgeMs).toISOString(),
      last_seen_at: new Date(now).toISOString(),
    };
    await this.store.records.put(team, recordNameOf(hash), { ...record });
    this.homeOf.set(hash, team);
    this.unknown.delete(hash);
    this.lastSeen.set(hash, now);
    return token;
  }

  /** The session behind a cookie's token, or null when it is malformed, unknown, signed out or expired, or its user (or key) is gone. */
  async authenticate(token: string): Promise<ActiveSession | null> {
    if (!TOKEN_FORMAT.test(token)) return null;
    const hash = hashOf(token);
    const home = this.homeOf.get(hash) ?? (this.unknown.has(hash) ? undefined : await this.lookup(hash));
    if (!home) return null;
    const record = await this.store.records.get(home, recordNameOf(hash));
    if (!isSessionRecord(record) || !timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) {
      this.forget(hash);
      return null;
    }
    const now = Date.now();
    const seen = Math.max(Date.parse(record.last_seen_at) || 0, this.lastSeen.get(hash) ?? 0);
    if (hasPassed(record.expires_at, now) || now - seen >= this.config.idleTimeoutMs) {
      await this.end(home, hash);
      return null;
    }
    const user = await this.store.get<User['spec'], User['status']>(userFamily.kind, record.team, record.user);
    if (!user || user.status.status !== 'active') return null;
    if (record.via === 'api_key' && !(await this.keyIsValid(record.team, record.key_id))) return null;
    this.noteUse(home, hash, record, seen, now);
    const role = user.spec.role;
    const installationAdmin = atLeast(role, 'admin') && record.team === (await this.installationTeamId());
    // The actor of what the session does is its user: the audit log names who did it.
    const principal: Principal = { team: record.team, user: user.meta.id, key: user.meta.id, role, scope: record.scope, installationAdmin };
    return { principal, record, home, token, user, idleExpiresAt: new Date(now + this.config.idleTimeoutMs).toISOString() };
  }

  /**
   * Whether `session` still acts as it did when it was authenticated: not signed out or
   * swept, not past its age, not moved to another team, its user active and its key (a
   * key's session) valid. Unlike `authenticate` it counts as no use, so what it keeps open
   * (a watch) does not keep the session alive.
   */
  async holds(session: ActiveSession): Promise<boolean> {
    const record = await this.store.records.get(session.home, recordNameOf(session.record.hash));
    if (!isSessionRecord(record) || record.hash !== session.record.hash || hasPassed(record.expires_at, Date.now())) return false;
    if (record.team !== session.record.team || record.user !== session.record.user) return false;
    const user = await this.store.get<User['spec'], User['status']>(userFamily.kind, record.team, record.user);
    if (!user || user.status.status !== 'active') return false;
    return record.via !== 'api_key' || this.keyIsValid(record.team, record.key_id);
  }

  /** Signs out: the session is removed from the store, so every replica refuses it from now on. */
  async signOut(session: ActiveSession): Promise<void> {
    await this.end(session.home, session.record.hash);
  }

  /** The teams the session's person may act in: every team where their e-mail is an active user (only the key's team for a key's session). */
  async teamsOf(session: Pick<ActiveSession, 'record' | 'principal'>): Promise<TeamChoice[]> {
    if (session.record.via === 'oidc') return this.choicesOf(await activeUsersByEmail(this.store, session.record.email));
    const user = await this.store.get<User['spec'], User['status']>(userFamily.kind, session.principal.team, session.principal.user);
    return this.choicesOf(user ? [user] : []);
  }

  /** Moves an identity provider's session to another team of the same person. */
  async switchTeam(session: ActiveSession, teamId: string): Promise<void> {
    if (session.record.via !== 'oidc') {
      throw forbidden("A session made from an API key stays in the key's team; sign in through the identity provider to choose a team.");
    }
    const user = (await activeUsersByEmail(this.store, session.record.email)).find((u) => u.meta.team === teamId);
    if (!user) throw notFound('team', teamId);
    const name = recordNameOf(session.record.hash);
    const next: SessionRecord = { ...session.record, team: teamId, user: user.meta.id };
    // Only if the session is as it was read: a sign-out meanwhile must not be undone.
    if (!(await this.store.records.swap(session.home, name, { ...session.record }, { ...next }))) {
      const current = await this.store.records.get(session.home, name);
      if (!isSessionRecord(current)) throw new ApiError(401, 'unauthorized', 'The session has ended; sign in again.');
      if (!(await this.store.records.swap(session.home, name, { ...current }, { ...current, team: teamId, user: user.meta.id }))) {
        throw new ApiError(409, 'resource_busy', 'The session changed meanwhile; try again.');
      }
    }
  }

  /** The CSRF token of a session: an HMAC keyed by its token. */
  csrfTokenOf(token: string): string {
    return createHmac('sha256', token).update(CSRF_CONTEXT).digest('base64url');
  }

  /** Whether `sent` is the session's CSRF token, compared in constant time. */
  csrfTokenMatches(token: string, sent: string | undefined): boolean {
    if (!sent) return false;
    const expected = Buffer.from(this.csrfTokenOf(token));
    const given = Buffer.from(sent);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Removes every session past its absolute or idle expiry (every replica may do it; a delete of a deleted record is harmless). */
  async removeExpired(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const stored of await this.store.records.list(SESSION_RECORD_PREFIX)) {
      const record = stored.data;
      if (!isSessionRecord(record)) continue;
      // The stored last use may lag by one resolution; a session is only removed once surely idle.
      const idleSince = Math.max(Date.parse(record.last_seen_at) || 0, this.lastSeen.get(record.hash) ?? 0);
      if (hasPassed(record.expires_at, now) || now - idleSince >= this.config.idleTimeoutMs + this.lastSeenResolutionMs) {
        await this.end(stored.team, record.hash);
        removed++;
      }
    }
    return removed;
  }

  private async choicesOf(users: User[]): Promise<TeamChoice[]> {
    const choices: TeamChoice[] = [];
    for (const user of users) {
      const team = await this.store.get<Team['spec'], Team['status']>(teamFamily.kind, user.meta.team, user.meta.team);
      if (team) choices.push({ id: team.meta.id, name: team.spec.name, role: user.spec.role });
    }
    return choices.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  private async keyIsValid(team: string, keyId: string | undefined): Promise<boolean> {
    if (!keyId) return false;
    const key = await this.store.get<ApiKey['spec'], ApiKey['status']>(apiKeyFamily.kind, team, keyId);
    if (!key || key.status.status !== 'active') return false;
    return !key.spec.expires_at || !hasPassed(key.spec.expires_at);
  }

  /**
   * Records the session's use: at once on this replica, in the store at most once per
   * resolution and without the request waiting. The write only succeeds on the session as
   * read, so it never brings back a session signed out meanwhile.
   */
  private noteUse(home: string, hash: string, record: SessionRecord, seen: number, now: number): void {
    this.lastSeen.set(hash, now);
    if (now - seen < this.lastSeenResolutionMs) return;
    const name = recordNameOf(hash);
    this.store.records.swap(home, name, { ...record }, { ...record, last_seen_at: new Date(now).toISOString() }).catch(() => undefined);
  }

  private async end(home: string, hash: string): Promise<void> {
    this.forget(hash);
    await this.store.records.delete(home, recordNameOf(hash));
  }

  private forget(hash: string): void {
    this.homeOf.delete(hash);
    this.lastSeen.delete(hash);
  }

  private async lookup(hash: string): Promise<string | undefined> {
    const stored = (await this.store.records.list(recordNameOf(hash))).at(0);
    if (!stored) {
      this.unknown.add(hash);
      return undefined;
    }
    this.homeOf.set(hash, stored.team);
    return stored.team;
  }

  private async installationTeamId(): Promise<string | undefined> {
    this.installationTeam ??= await installationTeamOf(this.store);
    return this.installationTeam;
  }
}

/** Active users with this e-mail (compared without case), in every team, oldest first. */
export async function activeUsersByEmail(store: Store, email: string): Promise<User[]> {
  const wanted = email.toLowerCase();
  const users = await store.list<User['spec'], User['status']>(userFamily.kind);
  return users
    .filter((u) => u.status.status === 'active' && u.spec.email.toLowerCase() === wanted && !u.meta.deletionTimestamp)
    .sort((a, b) => a.meta.createdAt.localeCompare(b.meta.createdAt));
}

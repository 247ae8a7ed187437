/**
 * Console sessions made by exchanging an API key (no identity provider configured, as on
 * the embedded default): the cookie is accepted across /api/v1 as the key is, its writes
 * need the CSRF token and are refused cross-site before the body is read, sign-out and
 * both expiries end it on the server, a removed member's or a revoked key's session dies
 * at once, and the cookie's value is nowhere in the log or at rest. Runs on both stores.
 */
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, RunningService } from '../../src/service';
import { ApiResponse, eventually, FAST_ENV, request, tempDataDir } from '../helpers/service';
import { clusterEnv, clusterFor, clusterMode } from '../helpers/cluster';
import { findIn, findInFiles } from '../helpers/secret-scan';

jest.setTimeout(120_000);

const LBS = '/api/v1/load-balancers';
const SESSION = '/api/v1/session';

interface Running {
  service: RunningService;
  url: string;
  key: string;
  dataDir: string;
  log: () => string;
}

/** The real service, logging at trace level into memory so the test can search the log. */
async function start(env: Record<string, string> = {}): Promise<Running> {
  const dataDir = tempDataDir();
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const cluster = clusterMode() ? await clusterEnv(dataDir) : {};
  const config = loadConfig({ ...FAST_ENV, CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: dataDir, ...cluster, ...env, CLOUDPLANE_LOG_LEVEL: 'trace' });
  const service = await startService(config, createLogger('trace', sink));
  return { service, url: service.url, key: service.bootstrap!.token, dataDir, log: () => lines.join('') };
}

interface Session {
  cookie: string;
  token: string;
  csrf: string;
  view: any;
  setCookie: string;
}

async function signIn(r: Running, key: string): Promise<Session> {
  const res = await request(r.url, 'POST', '/auth/session', undefined, { key });
  expect(res.status).toBe(201);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!;
  const token = /^cloudplane_session=([^;]+)/.exec(setCookie)![1];
  return { cookie: `cloudplane_session=${token}`, token, csrf: res.body.data.csrf_token, view: res.body.data, setCookie };
}

/** A request with the session cookie only (no key); `csrf` adds the token header. */
function withCookie(r: Running, s: Session, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return request(r.url, method, path, body, { key: null, headers: { cookie: s.cookie, ...headers } });
}
const csrfOf = (s: Session) => ({ 'x-csrf-token': s.csrf });

async function newMember(r: Running, email: string, role: string, scope = 'read_write'): Promise<{ id: string; key: string; keyId: string }> {
  const member = await request(r.url, 'POST', '/api/v1/settings/team/members', { email, role }, { key: r.key });
  expect(member.status).toBe(201);
  const key = await request(r.url, 'POST', '/api/v1/settings/api-keys', { name: `${email} key`, user_id: member.body.data.id, scope }, { key: r.key });
  expect(key.status).toBe(201);
  return { id: member.body.data.id, key: key.body.data.key, keyId: key.body.data.id };
}

describe('sessions from an API key', () => {
  let r: Running;
  const tokens: string[] = [];
  beforeAll(async () => {
    r = await start();
  });
  afterAll(async () => r.service.stop());

  it('says which sign-in the console offers: the API key, without an identity provider', async () => {
    const res = await request(r.url, 'GET', '/auth/config', undefined, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ oidc: false, api_key_sign_in: true });
  });

  it("exchanges a key for a session with the key's team, user, role and scope, in an HttpOnly SameSite=Lax cookie", async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const attributes = s.setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']));
    // Served over plain http (no CLOUDPLANE_PUBLIC_URL with https): no Secure, or the browser would drop it.
    expect(attributes).not.toContain('secure');
    expect(s.token).toMatch(/^cps_[A-Za-z0-9_-]{43}$/);
    const bootstrap = r.service.bootstrap!;
    expect(s.view).toMatchObject({
      user: { id: bootstrap.userId },
      team: { id: bootstrap.teamId },
      role: 'owner',
      scope: 'read_write',
      teams: [{ id: bootstrap.teamId, role: 'owner' }],
      via: 'api_key',
    });
    expect(typeof s.view.csrf_token).toBe('string');
    expect(Date.parse(s.view.expires_at)).toBeGreaterThan(Date.parse(s.view.idle_expires_at) - 1);

    const asked = await withCookie(r, s, 'GET', SESSION);
    expect(asked.status).toBe(200);
    expect(asked.body.data).toMatchObject({ via: 'api_key', csrf_token: s.csrf, user: { id: bootstrap.userId } });
  });

  it('shows the same view to a key, without a CSRF token', async () => {
    const res = await request(r.url, 'GET', SESSION, undefined, { key: r.key });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ via: 'bearer', role: 'owner', scope: 'read_write', idle_expires_at: null });
    expect(res.body.data.csrf_token).toBeUndefined();
  });

  it('accepts the cookie on reads and, with the CSRF token, on writes, with the user as the actor in the audit log', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const created = await withCookie(r, s, 'POST', LBS, { name: 'by-cookie', region: 'fra1' }, csrfOf(s));
    expect(created.status).toBe(201);
    expect(created.headers.get('x-ratelimit-limit')).toBe('1000');
    const read = await withCookie(r, s, 'GET', `${LBS}/${created.body.data.id}`);
    expect(read.status).toBe(200);
    const listed = await withCookie(r, s, 'GET', LBS);
    expect(listed.body.data.map((lb: { id: string }) => lb.id)).toContain(created.body.data.id);
    const events = await eventually(async () => {
      const res = await withCookie(r, s, 'GET', `/api/v1/audit-log?resource_id=${created.body.data.id}&type=load_balancer.created`);
      return res.body.data?.length ? res.body.data : null;
    });
    expect(events[0].actor).toBe(r.service.bootstrap!.userId);
  });

  it('refuses a cookie write without the CSRF token, or with a wrong one, with 403 forbidden, and changes nothing', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    for (const headers of [
      {} as Record<string, string>,
      { 'x-csrf-token': 'not-the-token' },
      { 'x-csrf-token': `${s.csrf}x` },
      { 'x-csrf-token': (await signIn(r, r.key)).csrf },
    ]) {
      const res = await withCookie(r, s, 'POST', LBS, { name: 'forged', region: 'fra1' }, headers);
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    }
    const del = await withCookie(r, s, 'DELETE', SESSION);
    expect(del.status).toBe(403);
    const listed = await withCookie(r, s, 'GET', LBS);
    expect(listed.body.data.map((lb: { name: string }) => lb.name)).not.toContain('forged');
  });

  it('refuses a cross-site form post before reading its body, and any write the browser marks cross-site', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    const posted = await withCookie(r, s, 'POST', LBS, undefined, form);
    // 403, not the 415 a form body would get once parsed.
    expect({ status: posted.status, code: posted.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    const raw = await request(r.url, 'POST', LBS, undefined, { key: null, headers: { cookie: s.cookie, ...form }, rawBody: 'name=forged&region=fra1' });
    expect({ status: raw.status, code: raw.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    // A body larger than the service accepts is not read either: 403, not 413.
    const huge = await request(r.url, 'POST', LBS, undefined, {
      key: null,
      headers: { cookie: s.cookie, 'content-type': 'application/json' },
      rawBody: 'x'.repeat(2 * 1024 * 1024),
    });
    expect({ status: huge.status, code: huge.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    // Even with the right token, a write the browser says came from another site.
    const marked = await withCookie(r, s, 'POST', LBS, { name: 'forged', region: 'fra1' }, { ...csrfOf(s), 'sec-fetch-site': 'cross-site' });
    expect(marked.status).toBe(403);
    const sameOrigin = await withCookie(r, s, 'POST', LBS, { name: 'same-origin', region: 'fra1' }, { ...csrfOf(s), 'sec-fetch-site': 'same-origin' });
    expect(sameOrigin.status).toBe(201);
  });

  it('writes the last use to the store at most once a minute, not on every request', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const [record] = (await r.service.ctx.store.records.list('session-')).filter((x) => x.data.hash === createHash('sha256').update(s.token).digest('hex'));
    const before = record.data.last_seen_at;
    for (let i = 0; i < 5; i++) expect((await withCookie(r, s, 'GET', LBS)).status).toBe(200);
    const after = await r.service.ctx.store.records.get(record.team, record.name);
    // Unless a minute passed (a stalled machine), the record is as sign-in wrote it.
    if (Date.now() - Date.parse(before) < 60_000) expect(after!.last_seen_at).toBe(before);
    expect(after).not.toHaveProperty('token');
  });

  it('judges a request that carries a key by the key alone', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const res = await request(r.url, 'GET', LBS, undefined, { key: 'cpk_00000000000000000000000000000000nope', headers: { cookie: s.cookie } });
    expect(res.status).toBe(401);
  });

  it('signs out: the session is deleted server-side, the cookie cleared, and the old cookie refused', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const out = await withCookie(r, s, 'DELETE', SESSION, undefined, csrfOf(s));
    expect(out.status).toBe(204);
    const cleared = out.headers.getSetCookie().find((c) => c.startsWith('cloudplane_session='))!;
    expect(cleared).toMatch(/^cloudplane_session=;/);
    expect(cleared.toLowerCase()).toMatch(/expires=thu, 01 jan 1970|max-age=0/);
    const after = await withCookie(r, s, 'GET', LBS);
    expect({ status: after.status, code: after.body.error?.code }).toEqual({ status: 401, code: 'unauthorized' });
    expect(await r.service.ctx.sessions.authenticate(s.token)).toBeNull();
  });

  it('gives a read_only key a read_only session, which may still sign out', async () => {
    const member = await newMember(r, 'reader@example.com', 'member', 'read_only');
    const s = await signIn(r, member.key);
    tokens.push(s.token);
    expect(s.view).toMatchObject({ scope: 'read_only', role: 'member' });
    expect((await withCookie(r, s, 'GET', LBS)).status).toBe(200);
    const write = await withCookie(r, s, 'POST', LBS, { name: 'read-only', region: 'fra1' }, csrfOf(s));
    expect({ status: write.status, code: write.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    expect((await withCookie(r, s, 'DELETE', SESSION, undefined, csrfOf(s))).status).toBe(204);
  });

  it("applies a changed role at once, and ends a removed member's session on the next request", async () => {
    const member = await newMember(r, 'leaver@example.com', 'member');
    const s = await signIn(r, member.key);
    tokens.push(s.token);
    expect((await withCookie(r, s, 'POST', LBS, { name: 'by-member', region: 'fra1' }, csrfOf(s))).status).toBe(201);
    expect((await request(r.url, 'PATCH', `/api/v1/settings/team/members/${member.id}`, { role: 'viewer' }, { key: r.key })).status).toBe(200);
    const asViewer = await withCookie(r, s, 'POST', LBS, { name: 'by-viewer', region: 'fra1' }, csrfOf(s));
    expect(asViewer.status).toBe(403);
    expect((await withCookie(r, s, 'GET', SESSION)).body.data.role).toBe('viewer');
    expect((await request(r.url, 'DELETE', `/api/v1/settings/team/members/${member.id}`, undefined, { key: r.key })).status).toBe(200);
    const removed = await withCookie(r, s, 'GET', LBS);
    expect({ status: removed.status, code: removed.body.error?.code }).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('ends the session of a key that is revoked', async () => {
    const member = await newMember(r, 'revoked@example.com', 'member');
    const s = await signIn(r, member.key);
    tokens.push(s.token);
    expect((await withCookie(r, s, 'GET', LBS)).status).toBe(200);
    expect((await request(r.url, 'DELETE', `/api/v1/settings/api-keys/${member.keyId}`, undefined, { key: r.key })).status).toBe(204);
    expect((await withCookie(r, s, 'GET', LBS)).status).toBe(401);
  });

  it('refuses a team switch for a session made from a key, and a missing or unknown cookie', async () => {
    const s = await signIn(r, r.key);
    tokens.push(s.token);
    const put = await withCookie(r, s, 'PUT', SESSION, { team_id: r.service.bootstrap!.teamId }, csrfOf(s));
    expect({ status: put.status, code: put.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    const none = await request(r.url, 'GET', LBS, undefined, { key: null });
    expect(none.status).toBe(401);
    const unknown = await request(r.url, 'GET', LBS, undefined, { key: null, headers: { cookie: `cloudplane_session=cps_${'A'.repeat(43)}` } });
    expect(unknown.status).toBe(401);
    const badKey = await request(r.url, 'POST', '/auth/session', undefined, { key: 'cpk_00000000000000000000000000000000nope' });
    expect({ status: badKey.status, code: badKey.body.error?.code }).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('keeps the cookie value and its CSRF token out of the log and out of the store at rest', async () => {
    expect(tokens.length).toBeGreaterThan(5);
    const needles = tokens.flatMap((token, i) => [
      { label: `session cookie ${i}`, value: token },
      { label: `CSRF token ${i}`, value: r.service.ctx.sessions.csrfTokenOf(token) },
    ]);
    const log = r.log();
    expect(log).toContain('request completed');
    const places = [r.dataDir, ...(clusterMode() ? [(await clusterFor(r.dataDir)).workDir] : [])];
    const found = [...places.flatMap((dir) => findInFiles(dir, needles)), ...findIn('the log', Buffer.from(log), needles)];
    expect(found).toEqual([]);
  });
});

describe('session expiry', () => {
  let r: Running;
  beforeAll(async () => {
    r = await start({ CLOUDPLANE_SESSION_IDLE_TIMEOUT: '3', CLOUDPLANE_SESSION_MAX_AGE: '8' });
  });
  afterAll(async () => r.service.stop());

  it('ends a session left unused for the idle timeout', async () => {
    const s = await signIn(r, r.key);
    // Each probe comes more than the idle timeout after the one before, so none keeps the session alive.
    await eventually(async () => (await withCookie(r, s, 'GET', LBS)).status === 401, 30_000, 3500);
    expect((await withCookie(r, s, 'GET', SESSION)).status).toBe(401);
  });

  it('ends a busy session at its absolute expiry', async () => {
    const s = await signIn(r, r.key);
    const expiresAt = Date.parse(s.view.expires_at);
    // Used every 200 ms, well within the idle timeout: only the absolute expiry can end it.
    await eventually(async () => (await withCookie(r, s, 'GET', LBS)).status === 401, 30_000, 200);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
  });

  it('removes expired sessions from the store', async () => {
    const s = await signIn(r, r.key);
    const name = `session-`;
    await eventually(async () => (await r.service.ctx.store.records.list(name)).length === 0, 30_000, 500);
    expect(await r.service.ctx.sessions.authenticate(s.token)).toBeNull();
  });
});

/**
 * Authentication across the API, with load balancers as the resource: team isolation,
 * revoked keys, unknown keys, the per-key rate limit, and keeping secrets out of the log.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createTeam, NewTeam } from '../../src/accounts/bootstrap';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService } from '../../src/service';
import { ApiResponse, eventually, FAST_ENV, request, startTestService, tempDataDir, TestService } from '../helpers/service';

const LBS = '/api/v1/load-balancers';

const idsOf = (res: ApiResponse): string[] => res.body.data.map((lb: { id: string }) => lb.id);

function secondTeam(t: TestService): Promise<NewTeam> {
  return createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other team', ownerName: 'Other', ownerEmail: 'other@example.com' });
}

/** A further key of the bootstrap team's owner. */
async function issueKey(t: TestService, name: string): Promise<{ keyId: string; token: string }> {
  const { key, token } = await t.service.ctx.authenticator.issue(t.teamId, t.service.bootstrap!.userId, name, 'test');
  return { keyId: key.meta.id, token };
}

describe('team isolation and key revocation', () => {
  let t: TestService;
  let other: NewTeam;
  beforeAll(async () => {
    t = await startTestService();
    other = await secondTeam(t);
  });
  afterAll(async () => t.stop());

  it("answers 404 to another team's load balancer id, on every verb, and changes nothing", async () => {
    const lb = (await t.api('POST', LBS, { name: 'mine', region: 'fra1' })).body.data;
    const asOther = { key: other.token };
    const attempts: Array<[string, string, unknown]> = [
      ['GET', `${LBS}/${lb.id}`, undefined],
      ['PATCH', `${LBS}/${lb.id}`, { algorithm: 'ip_hash' }],
      ['POST', `${LBS}/${lb.id}/detach`, { server_id: 'svr_0000000000000000' }],
      ['DELETE', `${LBS}/${lb.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await t.api(method, path, body, asOther);
      expect({ method, status: res.status, code: res.body.error?.code }).toEqual({ method, status: 404, code: 'load_balancer_not_found' });
    }
    const mine = await t.api('GET', `${LBS}/${lb.id}`);
    expect(mine.status).toBe(200);
    expect(mine.body.data).toMatchObject({ algorithm: 'round_robin' });
    expect(mine.body.data.status).not.toBe('deleted');
  });

  it("lists only the caller's own team's load balancers", async () => {
    const mine = (await t.api('POST', LBS, { name: 'listed-mine', region: 'fra1' })).body.data;
    const theirs = (await t.api('POST', LBS, { name: 'listed-theirs', region: 'fra1' }, { key: other.token })).body.data;
    for (const query of ['', '?status=creating', '?sort=name&order=asc', '?limit=100']) {
      const seenByOther = await t.api('GET', `${LBS}${query}`, undefined, { key: other.token });
      expect(seenByOther.status).toBe(200);
      expect(idsOf(seenByOther)).not.toContain(mine.id);
      const seenByMe = await t.api('GET', `${LBS}${query}`);
      expect(idsOf(seenByMe)).not.toContain(theirs.id);
    }
    expect(idsOf(await t.api('GET', LBS, undefined, { key: other.token }))).toContain(theirs.id);
    expect(idsOf(await t.api('GET', LBS))).toContain(mine.id);
  });

  it('refuses a revoked key on the very next request, and only that key', async () => {
    const { keyId, token } = await issueKey(t, 'to revoke');
    expect((await t.api('GET', LBS, undefined, { key: token })).status).toBe(200);
    await t.service.ctx.authenticator.revoke(t.teamId, keyId, 'test');
    const refused = await t.api('GET', LBS, undefined, { key: token });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    const write = await t.api('POST', LBS, { name: 'after-revoke', region: 'fra1' }, { key: token });
    expect(write.status).toBe(401);
    expect((await t.api('GET', LBS)).status).toBe(200);
  });
});

describe('unknown keys', () => {
  let t: TestService;
  let secretScans = 0;
  beforeAll(async () => {
    // Thousands of requests from one address would meet the limit for unknown keys first.
    t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000' });
    // Count the real store's scans of its secrets for one key, the work an unknown key
    // costs (the leader's secret sweep scans them too, by family: those are not counted).
    const { secrets } = t.service.ctx.store;
    const list = secrets.list.bind(secrets);
    secrets.list = (prefix: string) => {
      if (/^apikey-[0-9a-f]+$/.test(prefix)) secretScans++;
      return list(prefix);
    };
  });
  afterAll(async () => t.stop());

  const randomKey = () => `cpk_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'x')}`;

  it('looks an unknown key up in the store once, not on every request', async () => {
    const unknown = randomKey();
    const before = secretScans;
    for (let i = 0; i < 50; i++) expect((await t.api('GET', LBS, undefined, { key: unknown })).status).toBe(401);
    expect(secretScans - before).toBe(1);
    // Each distinct unknown key is looked up once.
    const others = Array.from({ length: 5 }, randomKey);
    for (const key of [...others, ...others]) expect((await t.api('GET', LBS, undefined, { key })).status).toBe(401);
    expect(secretScans - before).toBe(6);
  });

  it('takes a key issued on this replica at once, even one refused as unknown a moment before', async () => {
    const token = randomKey();
    expect((await t.api('GET', LBS, undefined, { key: token })).status).toBe(401);
    await t.service.ctx.authenticator.issue(t.teamId, t.service.bootstrap!.userId, 'issued after a refusal', 'test', { token });
    expect((await t.api('GET', LBS, undefined, { key: token })).status).toBe(200);
    const created = await t.api('POST', '/api/v1/settings/api-keys', { name: 'made through the API' });
    expect(created.status).toBe(201);
    expect((await t.api('GET', LBS, undefined, { key: created.body.data.key })).status).toBe(200);
  });

  it('asks the store again once the refusal has expired', async () => {
    const unknown = randomKey();
    const before = secretScans;
    expect((await t.api('GET', LBS, undefined, { key: unknown })).status).toBe(401);
    await eventually(
      async () => {
        expect((await t.api('GET', LBS, undefined, { key: unknown })).status).toBe(401);
        return secretScans - before === 2;
      },
      20_000,
      250,
    );
  });
});

describe('rate limit', () => {
  const LIMIT = 5;
  const TEAM_LIMIT = 3 * LIMIT;
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: String(LIMIT), CLOUDPLANE_RATE_LIMIT_PER_TEAM_PER_MINUTE: String(TEAM_LIMIT) });
  });
  afterAll(async () => t.stop());

  /** The window is a fixed minute: start right after one begins, so the count is not reset mid-test. */
  async function atStartOfWindow(): Promise<void> {
    const msLeft = 60_000 - (Date.now() % 60_000);
    if (msLeft < 15_000) await new Promise((resolve) => setTimeout(resolve, msLeft + 50));
  }

  it('counts per key with X-RateLimit headers, then answers 429 with Retry-After', async () => {
    await atStartOfWindow();
    const { token } = await issueKey(t, 'limited');
    const { token: otherToken } = await issueKey(t, 'not limited');
    const windowEnd = Math.ceil((Date.now() - (Date.now() % 60_000) + 60_000) / 1000);

    for (let i = 1; i <= LIMIT; i++) {
      // Errors count and carry the headers too.
      const res = i === 3 ? await t.api('GET', `${LBS}/lb_0000000000000000`, undefined, { key: token }) : await t.api('GET', LBS, undefined, { key: token });
      expect(res.status).toBe(i === 3 ? 404 : 200);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - i));
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBe(windowEnd);
    }

    const limited = await t.api('GET', LBS, undefined, { key: token });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limit_exceeded');
    expect(limited.body.meta.persistence).toBe('synced');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Math.abs(Date.now() / 1000 + retryAfter - windowEnd)).toBeLessThanOrEqual(2);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // A write is refused too, and not made.
    const write = await t.api('POST', LBS, { name: 'over-limit', region: 'fra1' }, { key: token });
    expect(write.status).toBe(429);

    const otherKey = await t.api('GET', LBS, undefined, { key: otherToken });
    expect(otherKey.status).toBe(200);
    expect(otherKey.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1));
    expect(idsOf(otherKey)).toEqual([]);
  });

  it("bounds what a team's keys send together: more keys do not buy a team more requests", async () => {
    await atStartOfWindow();
    // A team of its own, its keys issued in process, so no request of the test's set-up counts.
    const { ctx } = t.service;
    const team = await createTeam(ctx.writer, ctx.authenticator, { teamName: 'Many keys', ownerName: 'M', ownerEmail: 'many@example.com' });
    const tokens = [team.token];
    for (let i = 0; i < 3; i++) tokens.push((await ctx.authenticator.issue(team.teamId, team.userId, `extra-${i}`, 'system')).token);
    const get = (token: string) => t.api('GET', LBS, undefined, { key: token });

    // Three keys use their whole own limits: the team's, TEAM_LIMIT, is then used up too.
    for (const token of tokens.slice(0, 3)) for (let i = 0; i < LIMIT; i++) expect((await get(token)).status).toBe(200);
    const refused = await get(tokens[3]);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(new RegExp(`More than ${TEAM_LIMIT} requests this minute from the team's keys together`));
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The fourth key has most of its own limit left; what it may send is the least of the two.
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    // Another team is not held back by it.
    const { token: otherToken } = await secondTeam(t);
    expect((await get(otherToken)).status).toBe(200);
  });
});

describe('secrets in the log', () => {
  it('never writes an API key to the log, even at trace level', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const config = loadConfig({ ...FAST_ENV, CLOUDPLANE_LOG_LEVEL: 'trace', CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: tempDataDir() });
    const service = await startService(config, createLogger('trace', sink));
    try {
      const bootstrapKey = service.bootstrap!.token;
      const other = await createTeam(service.ctx.writer, service.ctx.authenticator, { teamName: 'Logged', ownerName: 'L', ownerEmail: 'l@example.com' });
      const unknownKey = `cpk_${'Zz9'.repeat(12)}`;
      const as = (key: string) => ({ key });

      const created = await request(service.url, 'POST', LBS, { name: 'logged', region: 'fra1' }, as(bootstrapKey));
      expect(created.status).toBe(201);
      await request(service.url, 'GET', `${LBS}/${created.body.data.id}`, undefined, as(bootstrapKey));
      await request(service.url, 'GET', `${LBS}/${created.body.data.id}`, undefined, as(other.token));
      await request(service.url, 'POST', LBS, { region: 'nowhere' }, as(other.token));
      await request(service.url, 'POST', LBS, undefined, { key: bootstrapKey, rawBody: '{broken', headers: { 'content-type': 'application/json' } });
      await request(service.url, 'GET', LBS, undefined, as(unknownKey));
      await request(service.url, 'GET', LBS, undefined, { headers: { authorization: `Basic ${bootstrapKey}` } });

      const log = lines.join('');
      // The log is really written to: the requests are in it.
      expect(log).toContain(created.body.data.id);
      // A line for each of the seven requests at least.
      expect(lines.length).toBeGreaterThanOrEqual(7);
      // Keys show a short prefix at most (cpk_ + 4): never the secret part.
      for (const key of [bootstrapKey, other.token, unknownKey]) {
        expect(log).not.toContain(key.slice(8));
      }
    } finally {
      await service.stop();
    }
  });
});

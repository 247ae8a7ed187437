/**
 * Teams, members, roles and key scopes through the API, as a platform team would use them
 * in cluster mode (run with CLOUDPLANE_TEST_STORE=kubernetes too): the installation admin
 * makes a second team, its owner invites a viewer and makes the viewer's key, and every
 * write is refused to the viewer with 403 forbidden.
 */
import { ApiResponse, eventually, startTestService, TestService } from '../helpers/service';
import { concretePath, isWrite, routesOf } from '../helpers/routes';

const LBS = '/api/v1/load-balancers';
const MEMBERS = '/api/v1/settings/team/members';
const KEYS = '/api/v1/settings/api-keys';

type Call = (method: string, path: string, body?: unknown) => Promise<ApiResponse>;

const expectForbidden = (res: ApiResponse) => expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 403, code: 'forbidden' });

describe('teams, members and keys through the API', () => {
  let t: TestService;
  /** The bootstrap team's owner: an installation admin. */
  let admin: Call;
  /** Team B, made through the API. */
  let teamB: { id: string; ownerId: string; ownerKey: string };
  let ownerB: Call;
  let viewer: { id: string; key: string };
  let asViewer: Call;
  const as =
    (key: string): Call =>
    (method, path, body) =>
      t.api(method, path, body, { key });

  /** Invites `email` into the caller's team with `role` and makes the new member's first key. */
  async function member(caller: Call, email: string, role: string): Promise<{ id: string; key: string }> {
    const invited = await caller('POST', MEMBERS, { email, role });
    expect(invited.status).toBe(201);
    const key = await caller('POST', KEYS, { name: `${role} key`, user_id: invited.body.data.id });
    expect(key.status).toBe(201);
    expect(key.body.data.user_id).toBe(invited.body.data.id);
    return { id: invited.body.data.id, key: key.body.data.key };
  }

  beforeAll(async () => {
    t = await startTestService();
    admin = as(t.key);
    const created = await admin('POST', '/api/v1/teams', { name: 'Team B', owner_email: 'owner@b.example' });
    expect(created.status).toBe(201);
    const { data } = created.body;
    teamB = { id: data.id, ownerId: data.owner.id, ownerKey: data.api_key.key };
    ownerB = as(teamB.ownerKey);
    viewer = await member(ownerB, 'viewer@b.example', 'viewer');
    asViewer = as(viewer.key);
  });
  afterAll(async () => t.stop());

  it('creates a team with its owner and first key, shown once, at a Location the admin can read', async () => {
    const created = await admin('POST', '/api/v1/teams', { name: 'Team C', owner_email: 'Carol@c.example', owner_name: 'Carol' });
    expect(created.status).toBe(201);
    const { data } = created.body;
    expect(data).toMatchObject({ name: 'Team C', owner_id: data.owner.id });
    expect(data.owner).toMatchObject({ email: 'Carol@c.example', name: 'Carol', role: 'owner', status: 'active', team_id: data.id });
    expect(data.api_key).toMatchObject({ user_id: data.owner.id, scope: 'read_write', expires_at: null, status: 'active' });
    expect(data.api_key.key).toMatch(/^cpk_[0-9A-Za-z]{32,}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/teams/${data.id}`);

    const read = await admin('GET', `/api/v1/teams/${data.id}`);
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain(data.api_key.key);
    const listed = await admin('GET', '/api/v1/teams?limit=100');
    expect(listed.body.data.map((team: { id: string }) => team.id)).toEqual(expect.arrayContaining([t.teamId, teamB.id, data.id]));

    const profile = await as(data.api_key.key)('GET', '/api/v1/settings/team');
    expect(profile.body.data).toMatchObject({ id: data.id, name: 'Team C' });
  });

  it('refuses a team without an owner e-mail', async () => {
    const res = await admin('POST', '/api/v1/teams', { name: 'No owner' });
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['owner_email']);
  });

  it('lets only installation admins (owners and admins of the first team) create or list teams', async () => {
    // Team B's owner owns a team, but not the installation.
    expectForbidden(await ownerB('POST', '/api/v1/teams', { name: 'Rogue', owner_email: 'x@b.example' }));
    expectForbidden(await ownerB('GET', '/api/v1/teams'));
    expectForbidden(await ownerB('GET', `/api/v1/teams/${t.teamId}`));

    const memberA = await member(admin, 'member@a.example', 'member');
    expectForbidden(await as(memberA.key)('POST', '/api/v1/teams', { name: 'Rogue', owner_email: 'x@a.example' }));
    const adminA = await member(admin, 'admin@a.example', 'admin');
    const byAdmin = await as(adminA.key)('POST', '/api/v1/teams', { name: 'Team D', owner_email: 'd@d.example' });
    expect(byAdmin.status).toBe(201);
  });

  it('lets a viewer read and refuses its writes with 403 forbidden', async () => {
    const lb = await ownerB('POST', LBS, { name: 'web', region: 'fra1' });
    expect(lb.status).toBe(201);
    const listed = await asViewer('GET', LBS);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((x: { id: string }) => x.id)).toEqual([lb.body.data.id]);
    expect((await asViewer('GET', MEMBERS)).body.data.map((m: { role: string }) => m.role).sort()).toEqual(['owner', 'viewer']);

    expectForbidden(await asViewer('POST', LBS, { name: 'nope', region: 'fra1' }));
    expectForbidden(await asViewer('PATCH', `${LBS}/${lb.body.data.id}`, { name: 'renamed' }));
    expectForbidden(await asViewer('DELETE', `${LBS}/${lb.body.data.id}`));
    expectForbidden(await asViewer('POST', KEYS, { name: 'my own' }));
    expectForbidden(await asViewer('PATCH', '/api/v1/settings/profile', { name: 'Vera' }));
    expect((await ownerB('GET', `${LBS}/${lb.body.data.id}`)).body.data.name).toBe('web');
  });

  it('refuses every write route of the API to a viewer and to a read_only key, so a new route cannot forget it', async () => {
    const readOnly = (await ownerB('POST', KEYS, { name: 'dashboards', scope: 'read_only' })).body.data.key;
    // Every route the server has, documented or not, from Fastify's own route tree.
    // The console's sign-in (/auth/*) is outside /api/v1 and its document: POST /auth/session
    // exchanges the key it is sent for a session of that key's own role and scope. The MCP
    // endpoint's POST only carries tool calls, each made and judged as the request it is
    // (a write tool is refused to a read_only key and a viewer: test/api/mcp.test.ts).
    const carriesCalls = (route: { method: string; url: string }) => route.method === 'POST' && route.url === '/api/v1/mcp';
    const writes = routesOf(t.service.app.printRoutes({ commonPrefix: false })).filter(
      (route) => isWrite(route) && !route.url.startsWith('/auth/') && !carriesCalls(route),
    );
    const document = (await t.api('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    const documented = Object.entries<Record<string, unknown>>(document.paths)
      .flatMap(([path, item]) =>
        Object.keys(item)
          .filter((m) => m !== 'get')
          .map((m) => `${m.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`),
      )
      .filter((route) => route !== 'POST /api/v1/mcp');
    expect(writes.map(({ method, url }) => `${method} ${url}`).sort()).toEqual(documented.sort());
    expect(writes.length).toBeGreaterThan(30);

    // A caller's own session is theirs whatever their role: a viewer or a read_only session
    // may still switch team or sign out (test/api/sessions.test.ts).
    const ownSession = new Set(['PUT /api/v1/session', 'DELETE /api/v1/session']);
    const wrongly: string[] = [];
    for (const { method, url } of writes) {
      if (ownSession.has(`${method} ${url}`)) continue;
      const path = concretePath(url);
      for (const [who, key] of [
        ['viewer', viewer.key],
        ['read_only key', readOnly],
      ]) {
        const res = await t.api(method, path, {}, { key });
        if (res.status !== 403 || res.body.error.code !== 'forbidden') wrongly.push(`${method} ${url} as ${who}: ${res.status}`);
      }
    }
    expect(wrongly).toEqual([]);
  });

  it("answers reads to a read_only key and refuses its writes, and shows the key's scope", async () => {
    const created = await ownerB('POST', KEYS, { name: 'reporting', scope: 'read_only' });
    expect(created.body.data).toMatchObject({ scope: 'read_only', expires_at: null, last_used_at: null });
    const readOnly = as(created.body.data.key);
    expect((await readOnly('GET', LBS)).status).toBe(200);
    const refused = await readOnly('POST', LBS, { name: 'nope', region: 'fra1' });
    expectForbidden(refused);
    expect(refused.body.error.message).toMatch(/read_only/);
  });

  it('refuses an expired key with 401 as it refuses an unknown one, and a key that expires in the past', async () => {
    const expiresAt = new Date(Date.now() + 6000).toISOString();
    const created = await ownerB('POST', KEYS, { name: 'short-lived', expires_at: expiresAt });
    expect(created.status).toBe(201);
    expect(created.body.data.expires_at).toBe(expiresAt);
    const shortLived = as(created.body.data.key);
    const beforeExpiry = await shortLived('GET', LBS);
    // Refused only if the machine was so loaded that the key had expired by then.
    if (beforeExpiry.status !== 200)
      expect({ status: beforeExpiry.status, expired: Date.now() >= Date.parse(expiresAt) }).toEqual({ status: 401, expired: true });
    const refused = await eventually(
      async () => {
        const res = await shortLived('GET', LBS);
        return res.status === 401 ? res : null;
      },
      20_000,
      250,
    );
    expect(refused.body.error.code).toBe('unauthorized');
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);

    const past = await ownerB('POST', KEYS, { name: 'already gone', expires_at: '2020-01-01T00:00:00Z' });
    expect(past.status).toBe(422);
    expect(past.body.error.details[0].field).toBe('expires_at');
  });

  it('shows when a key was last used', async () => {
    const created = await ownerB('POST', KEYS, { name: 'used once' });
    const { id, key } = created.body.data;
    expect(created.body.data.last_used_at).toBeNull();
    const before = Date.now();
    expect((await as(key)('GET', LBS)).status).toBe(200);
    const used = await eventually(async () => {
      const listed = await ownerB('GET', `${KEYS}?limit=100`);
      return listed.body.data.find((k: { id: string; last_used_at: string | null }) => k.id === id && k.last_used_at);
    });
    expect(Date.parse(used.last_used_at)).toBeGreaterThanOrEqual(before - 1000);
  });

  it("keeps teams apart: team B's keys see nothing of team A", async () => {
    const lbA = (await admin('POST', LBS, { name: 'team-a-only', region: 'fra1' })).body.data;
    const ownerA = (await admin('GET', '/api/v1/settings/profile')).body.data;
    const keyA = (await admin('POST', KEYS, { name: 'a key' })).body.data;
    for (const caller of [ownerB, asViewer]) {
      expect((await caller('GET', LBS)).body.data.map((x: { id: string }) => x.id)).not.toContain(lbA.id);
      expect((await caller('GET', `${LBS}/${lbA.id}`)).body.error.code).toBe('load_balancer_not_found');
      expect((await caller('GET', `${MEMBERS}/${ownerA.id}`)).body.error.code).toBe('member_not_found');
      const members = (await caller('GET', `${MEMBERS}?limit=100`)).body.data;
      expect(members.every((m: { team_id: string }) => m.team_id === teamB.id)).toBe(true);
      expect((await caller('GET', `${KEYS}?limit=100`)).body.data.map((k: { id: string }) => k.id)).not.toContain(keyA.id);
    }
    expect((await ownerB('DELETE', `${KEYS}/${keyA.id}`)).body.error.code).toBe('api_key_not_found');
    expect((await ownerB('PATCH', `${MEMBERS}/${ownerA.id}`, { role: 'viewer' })).body.error.code).toBe('member_not_found');
    expect((await ownerB('POST', KEYS, { name: 'steal', user_id: ownerA.id })).status).toBe(422);
    expect((await admin('GET', `${LBS}/${lbA.id}`)).status).toBe(200);
  });

  describe('members', () => {
    it('lets an admin manage members but not owners, and a member manage neither members nor keys of others', async () => {
      const adminB = await member(ownerB, 'admin@b.example', 'admin');
      const memberB = await member(ownerB, 'member@b.example', 'member');
      const asAdmin = as(adminB.key);
      const asMember = as(memberB.key);

      expectForbidden(await asAdmin('POST', MEMBERS, { email: 'second-owner@b.example', role: 'owner' }));
      expectForbidden(await asAdmin('PATCH', `${MEMBERS}/${teamB.ownerId}`, { role: 'member' }));
      expectForbidden(await asAdmin('DELETE', `${MEMBERS}/${teamB.ownerId}`));
      expectForbidden(await asAdmin('POST', KEYS, { name: 'as the owner', user_id: teamB.ownerId }));
      expectForbidden(await asAdmin('PATCH', `${MEMBERS}/${memberB.id}`, { role: 'owner' }));
      const promoted = await asAdmin('PATCH', `${MEMBERS}/${memberB.id}`, { role: 'viewer' });
      expect(promoted.status).toBe(200);
      expect(promoted.body.data.role).toBe('viewer');
      // The new role applies from the very next request.
      expectForbidden(await asMember('POST', LBS, { name: 'nope', region: 'fra1' }));
      expect((await asAdmin('PATCH', `${MEMBERS}/${memberB.id}`, { role: 'member' })).body.data.role).toBe('member');

      expectForbidden(await asMember('POST', MEMBERS, { email: 'friend@b.example', role: 'viewer' }));
      expectForbidden(await asMember('PATCH', `${MEMBERS}/${viewer.id}`, { role: 'member' }));
      expectForbidden(await asMember('PATCH', '/api/v1/settings/team', { name: 'Mine now' }));
      expectForbidden(await asMember('POST', KEYS, { name: 'for the viewer', user_id: viewer.id }));
      const adminKeyId = (await ownerB('GET', `${KEYS}?limit=100`)).body.data.find((k: { user_id: string }) => k.user_id === adminB.id).id;
      expectForbidden(await asMember('DELETE', `${KEYS}/${adminKeyId}`));
      // A member makes, and revokes, keys of its own.
      const own = await asMember('POST', KEYS, { name: 'laptop' });
      expect(own.status).toBe(201);
      expect((await asMember('DELETE', `${KEYS}/${own.body.data.id}`)).status).toBe(204);
      expect((await asAdmin('PATCH', '/api/v1/settings/team', { name: 'Team B' })).status).toBe(200);
    });

    it('names a member after the e-mail, cut to the 100 characters a name may have', async () => {
      const email = `${'a'.repeat(150)}@long.example`;
      const invited = await ownerB('POST', MEMBERS, { email, role: 'viewer' });
      expect(invited.status).toBe(201);
      expect(invited.body.data.name).toBe('a'.repeat(100));
      const team = await admin('POST', '/api/v1/teams', { name: 'Long', owner_email: email });
      expect(team.status).toBe(201);
      expect(team.body.data.owner.name).toBe('a'.repeat(100));
    });

    it('refuses a second membership of one e-mail with 409 name_taken', async () => {
      const again = await ownerB('POST', MEMBERS, { email: 'VIEWER@b.example', role: 'member' });
      expect({ status: again.status, code: again.body.error.code }).toEqual({ status: 409, code: 'name_taken' });
    });

    it('keeps the last owner, and hands the team over when an owner leaves', async () => {
      const last = await ownerB('PATCH', `${MEMBERS}/${teamB.ownerId}`, { role: 'admin' });
      expect({ status: last.status, code: last.body.error.code }).toEqual({ status: 409, code: 'invalid_state' });
      expect((await ownerB('DELETE', `${MEMBERS}/${teamB.ownerId}`)).body.error.code).toBe('invalid_state');

      const second = await member(ownerB, 'second-owner@b.example', 'owner');
      const stepDown = await ownerB('PATCH', `${MEMBERS}/${teamB.ownerId}`, { role: 'admin' });
      expect(stepDown.body.data.role).toBe('admin');
      expect((await ownerB('GET', '/api/v1/settings/team')).body.data.owner_id).toBe(second.id);
      expect((await as(second.key)('PATCH', `${MEMBERS}/${teamB.ownerId}`, { role: 'owner' })).body.data.role).toBe('owner');
    });

    it("removes a member: the record stays, status removed, and the member's keys stop working", async () => {
      const leaving = await member(ownerB, 'leaving@b.example', 'member');
      expect((await as(leaving.key)('GET', LBS)).status).toBe(200);
      const removed = await ownerB('DELETE', `${MEMBERS}/${leaving.id}`);
      expect(removed.status).toBe(200);
      expect(removed.body.data).toMatchObject({ id: leaving.id, status: 'removed' });
      expect((await as(leaving.key)('GET', LBS)).status).toBe(401);
      expect((await ownerB('GET', MEMBERS)).body.data.map((m: { id: string }) => m.id)).not.toContain(leaving.id);
      expect((await ownerB('GET', `${MEMBERS}?status=removed`)).body.data.map((m: { id: string }) => m.id)).toEqual([leaving.id]);
      expect((await ownerB('GET', `${MEMBERS}/${leaving.id}`)).body.error.code).toBe('member_not_found');
      const events = await eventually(async () => {
        const types = (await t.service.ctx.bus.recent(teamB.id, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === leaving.id).map((e) => e.type);
        return types.includes('profile.removed') ? types : null;
      });
      expect(events).toEqual(['profile.created', 'profile.removed']);
      // The e-mail can be invited again, as a new member.
      expect((await ownerB('POST', MEMBERS, { email: 'leaving@b.example', role: 'viewer' })).status).toBe(201);
    });
  });
});

import { startTestService, TestService, eventually } from '../helpers/service';

describe('settings', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  const typesOf = async (id: string) => (await t.service.ctx.bus.recent(t.teamId, '1970-01-01T00:00:00Z')).filter((e) => e.data.id === id).map((e) => e.type);

  it('reads and updates the profile, with a profile.updated event', async () => {
    const profile = await t.api('GET', '/api/v1/settings/profile');
    expect(profile.status).toBe(200);
    expect(profile.body.data).toMatchObject({ role: 'owner', team_id: t.teamId });
    const updated = await t.api('PATCH', '/api/v1/settings/profile', { name: 'Ada Lovelace', email: 'ada@example.org' });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ name: 'Ada Lovelace', email: 'ada@example.org' });
    expect((await t.api('GET', '/api/v1/settings/profile')).body.data.email).toBe('ada@example.org');
    const types = await eventually(async () => {
      const all = await typesOf(profile.body.data.id);
      return all.includes('profile.updated') ? all : null;
    });
    expect(types.filter((x) => x === 'profile.updated')).toHaveLength(1);

    const bad = await t.api('PATCH', '/api/v1/settings/profile', { email: 'not-an-email', role: 'owner' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: any) => d.field).sort()).toEqual(['email', 'role']);
  });

  it('reads and renames the team', async () => {
    const team = await t.api('GET', '/api/v1/settings/team');
    expect(team.body.data).toMatchObject({ id: t.teamId, name: 'My team' });
    // Publishing the creation event from the outbox is not an update of the team.
    expect(team.body.data.updated_at).toBe(team.body.data.created_at);
    const renamed = await t.api('PATCH', '/api/v1/settings/team', { name: 'Platform' });
    expect(renamed.body.data.name).toBe('Platform');
    await eventually(async () => (await typesOf(t.teamId)).includes('team.updated'));
  });

  it('creates a key shown once, lists keys without it, and revokes it for the very next request', async () => {
    const created = await t.api('POST', '/api/v1/settings/api-keys', { name: 'ci' });
    expect(created.status).toBe(201);
    const { key, id } = created.body.data;
    expect(key).toMatch(/^cpk_[0-9A-Za-z]{32,}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/settings/api-keys/${id}`);

    const listed = await t.api('GET', '/api/v1/settings/api-keys');
    expect(listed.body.data.map((k: any) => k.id)).toContain(id);
    expect(JSON.stringify(listed.body)).not.toContain(key);
    expect(listed.body.data.find((k: any) => k.id === id)).toMatchObject({
      name: 'ci',
      status: 'active',
      revoked_at: null,
      prefix: key.slice(0, 8),
      scope: 'read_write',
      expires_at: null,
    });

    expect((await t.api('GET', '/api/v1/settings/profile', undefined, { key })).status).toBe(200);
    const revoked = await t.api('DELETE', `/api/v1/settings/api-keys/${id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBeNull();
    const refused = await t.api('GET', '/api/v1/settings/profile', undefined, { key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');

    expect((await t.api('DELETE', `/api/v1/settings/api-keys/${id}`)).body.error.code).toBe('api_key_not_found');
    const revokedList = await t.api('GET', '/api/v1/settings/api-keys?status=revoked');
    expect(revokedList.body.data.map((k: any) => k.id)).toEqual([id]);
    const types = await eventually(async () => {
      const all = await typesOf(id);
      return all.includes('api_key.revoked') ? all : null;
    });
    expect(types).toEqual(['api_key.created', 'api_key.revoked']);
  });

  it('rotates a key: a new key with the same settings, shown once, and the old one refused from the next request', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await t.api('POST', '/api/v1/settings/api-keys', { name: 'deploy', scope: 'read_only', expires_at: expiresAt });
    const old = created.body.data;
    const rotated = await t.api('POST', `/api/v1/settings/api-keys/${old.id}/rotate`);
    expect(rotated.status).toBe(201);
    const fresh = rotated.body.data;
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.key).toMatch(/^cpk_[0-9A-Za-z]{32,}$/);
    expect(fresh.key).not.toBe(old.key);
    expect(fresh).toMatchObject({ name: 'deploy', scope: 'read_only', expires_at: expiresAt, status: 'active' });
    expect(rotated.headers.get('location')).toBe(`/api/v1/settings/api-keys/${fresh.id}`);

    expect((await t.api('GET', '/api/v1/settings/profile', undefined, { key: old.key })).status).toBe(401);
    expect((await t.api('GET', '/api/v1/settings/profile', undefined, { key: fresh.key })).status).toBe(200);
    // The new key keeps the old one's scope.
    expect((await t.api('PATCH', '/api/v1/settings/profile', { name: 'x' }, { key: fresh.key })).status).toBe(403);
    const listed = await t.api('GET', '/api/v1/settings/api-keys');
    expect(JSON.stringify(listed.body)).not.toContain(fresh.key);
    expect((await t.api('POST', `/api/v1/settings/api-keys/${old.id}/rotate`)).body.error.code).toBe('api_key_not_found');
  });

  it('refuses a key without a name, or with an unknown scope or a malformed expiry', async () => {
    const res = await t.api('POST', '/api/v1/settings/api-keys', {});
    expect(res.status).toBe(422);
    expect(res.body.error.details[0].field).toBe('name');
    const bad = await t.api('POST', '/api/v1/settings/api-keys', { name: 'x', scope: 'admin', expires_at: 'tomorrow' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: any) => d.field).sort()).toEqual(['expires_at', 'scope']);
  });
});

/**
 * Managed databases through the API: the lifecycle (creating -> running -> deleted), the
 * administrator's password shown once (by the create and by reset-password, never by a
 * read, a list or an event), and the rules of a create.
 */
import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';

describe('databases', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it('goes creating -> running with its connection details, and shows the password once', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'orders', region: 'fra1' });
    expect(created.status).toBe(201);
    const db = created.body.data;
    expect(db.id).toMatch(/^db_[0-9a-z]{16,26}$/);
    expect(db).toMatchObject({
      name: 'orders',
      status: 'creating',
      engine: 'pg',
      version: null,
      size: 'db-s-1vcpu-1gb',
      num_nodes: 1,
      storage_gb: 10,
      connection: null,
      standby_nodes: 0,
    });
    expect(db.password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(created.headers.get('location')).toBe(`/api/v1/databases/${db.id}`);

    const running = await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    expect(running.password).toBeUndefined();
    expect(running.version).toBe('17');
    expect(running.connection).toEqual({
      host: expect.stringContaining('.db.fra1.'),
      port: 25060,
      user: 'dbadmin',
      database: 'defaultdb',
      ssl_mode: 'require',
      uri: `postgresql://dbadmin@${running.connection.host}:25060/defaultdb?sslmode=require`,
    });

    const listed = await t.api('GET', '/api/v1/databases');
    expect(listed.body.data.map((d: { id: string }) => d.id)).toContain(db.id);
    const events = await eventually(async () => {
      const page = await t.api('GET', `/api/v1/audit-log?resource_id=${db.id}`);
      return page.body.data.some((e: { type: string }) => e.type === 'database.running') ? page.body.data : null;
    });
    expect(events.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['database.created', 'database.running']));
    for (const text of [JSON.stringify(listed.body), JSON.stringify(events)]) expect(text).not.toContain(db.password);
  });

  it('resets the password: a new one, shown once, set by the driver (database.updated)', async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'billing', region: 'fra1', version: '15', num_nodes: 3 })).body.data;
    await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    const reset = await t.api('POST', `/api/v1/databases/${db.id}/reset-password`);
    expect(reset.status).toBe(200);
    expect(reset.body.data).toMatchObject({ id: db.id, version: '15', num_nodes: 3 });
    expect(reset.body.data.password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(reset.body.data.password).not.toBe(db.password);
    expect(await t.service.ctx.store.secrets.get(t.teamId, `db-password-${db.id}`)).toEqual({ value: reset.body.data.password });
    await eventually(async () => {
      const page = await t.api('GET', `/api/v1/audit-log?resource_id=${db.id}&type=database.updated`);
      return page.body.data.length > 0;
    });
    const after = await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    expect(after.standby_nodes).toBe(2);
    expect(JSON.stringify(after)).not.toContain(reset.body.data.password);
  });

  it('answers a replayed create with the same password, and refuses what it cannot make', async () => {
    const key = `db-${Date.now()}`;
    const first = await t.api('POST', '/api/v1/databases', { name: 'replayed', region: 'fra1' }, { headers: { 'idempotency-key': key } });
    const again = await t.api('POST', '/api/v1/databases', { name: 'replayed', region: 'fra1' }, { headers: { 'idempotency-key': key } });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body.data.password).toBe(first.body.data.password);

    const taken = await t.api('POST', '/api/v1/databases', { name: 'replayed', region: 'fra1' });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('name_taken');
    for (const [body, field] of [
      [{ name: 'x1', region: 'fra1', engine: 'mysql' }, 'engine'],
      [{ name: 'x2', region: 'fra1', version: '9' }, 'version'],
      [{ name: 'x3', region: 'fra1', num_nodes: 4 }, 'num_nodes'],
      [{ name: 'x4', region: 'fra1', storage_gb: 5 }, 'storage_gb'],
      [{ name: 'x5', region: 'fra1', password: 'mine' }, 'password'],
    ] as const) {
      const refused = await t.api('POST', '/api/v1/databases', body);
      expect([refused.status, refused.body.error.code]).toEqual([422, 'validation_failed']);
      expect(JSON.stringify(refused.body.error)).toContain(field);
    }
    const unknown = await t.api('POST', '/api/v1/databases/db_00000000000000000000/reset-password');
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'database_not_found']);
  });

  it("keeps users and logical databases as named parts: a user's password shown once, the rules of each", async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'parts', region: 'fra1' })).body.data;
    const base = `/api/v1/databases/${db.id}`;
    const user = await t.api('POST', `${base}/users`, { name: 'app_user' });
    expect(user.status).toBe(201);
    expect(user.body.data).toEqual({ name: 'app_user', role: 'normal', password: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });
    expect(await t.service.ctx.store.secrets.get(t.teamId, `db-user-${db.id}.app_user`)).toEqual({ value: user.body.data.password });
    expect((await t.api('GET', `${base}/users`)).body.data).toEqual([
      { name: 'dbadmin', role: 'primary' },
      { name: 'app_user', role: 'normal' },
    ]);
    expect((await t.api('GET', `${base}/users/app_user`)).body.data).toEqual({ name: 'app_user', role: 'normal' });
    const reset = await t.api('POST', `${base}/users/app_user/reset-password`);
    expect(reset.status).toBe(200);
    expect(reset.body.data.password).not.toBe(user.body.data.password);
    expect(await t.service.ctx.store.secrets.get(t.teamId, `db-user-${db.id}.app_user`)).toEqual({ value: reset.body.data.password });

    // A name taken keeps its password: the refusal comes before the secret is touched.
    const again = await t.api('POST', `${base}/users`, { name: 'app_user' });
    expect([again.status, again.body.error.code]).toEqual([409, 'name_taken']);
    expect(await t.service.ctx.store.secrets.get(t.teamId, `db-user-${db.id}.app_user`)).toEqual({ value: reset.body.data.password });
    for (const name of ['dbadmin', 'postgres', 'pg_monitor', 'Upper', '1abc', 'a-b']) {
      const refused = await t.api('POST', `${base}/users`, { name });
      expect([name, refused.status, refused.body.error.code]).toEqual([name, 422, 'validation_failed']);
    }
    expect((await t.api('GET', `${base}/users/nobody`)).body.error.code).toBe('database_user_not_found');
    expect((await t.api('DELETE', `${base}/users/dbadmin`)).body.error.code).toBe('invalid_state');

    expect((await t.api('POST', `${base}/dbs`, { name: 'reports' })).status).toBe(201);
    expect((await t.api('GET', `${base}/dbs`)).body.data).toEqual([{ name: 'defaultdb' }, { name: 'reports' }]);
    expect((await t.api('POST', `${base}/dbs`, { name: 'reports' })).body.error.code).toBe('name_taken');
    expect((await t.api('POST', `${base}/dbs`, { name: 'template1' })).body.error.code).toBe('validation_failed');
    expect((await t.api('DELETE', `${base}/dbs/defaultdb`)).body.error.code).toBe('invalid_state');
    expect((await t.api('GET', `${base}/dbs/nothing`)).body.error.code).toBe('database_db_not_found');

    const record = (await t.api('GET', base)).body.data;
    expect(record).toMatchObject({
      db_names: ['defaultdb', 'reports'],
      users: [
        { name: 'dbadmin', role: 'primary' },
        { name: 'app_user', role: 'normal' },
      ],
    });
    expect(JSON.stringify(record)).not.toContain(reset.body.data.password);

    expect((await t.api('DELETE', `${base}/users/app_user`)).status).toBe(200);
    expect(await t.service.ctx.store.secrets.get(t.teamId, `db-user-${db.id}.app_user`)).toBeUndefined();
    expect((await t.api('DELETE', `${base}/dbs/reports`)).status).toBe(200);
    expect((await t.api('GET', base)).body.data).toMatchObject({ db_names: ['defaultdb'], users: [{ name: 'dbadmin', role: 'primary' }] });
  });

  it('tells a logical database made or dropped as data.created and data.destroyed, once the driver applied it', async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'told', region: 'fra1' })).body.data;
    const base = `/api/v1/databases/${db.id}`;
    await waitForStatus(t, base, 'running');
    const dataEvents = async (count: number) =>
      eventually(async () => {
        const page = await t.api('GET', '/api/v1/audit-log?type=data.*&order=asc&limit=100');
        const mine = page.body.data.filter((e: { data: { database_id?: string } }) => e.data.database_id === db.id);
        return mine.length >= count ? mine : null;
      });
    expect((await t.api('POST', `${base}/dbs`, { name: 'analytics' })).status).toBe(201);
    const [created] = await dataEvents(1);
    expect(created).toMatchObject({
      type: 'data.created',
      team_id: t.teamId,
      data: { kind: 'database', database_id: db.id, database_name: 'told', name: 'analytics' },
    });
    expect((await t.api('DELETE', `${base}/dbs/analytics`)).status).toBe(200);
    const events = await dataEvents(2);
    expect(events.map((e: { type: string; data: { name: string } }) => [e.type, e.data.name])).toEqual([
      ['data.created', 'analytics'],
      ['data.destroyed', 'analytics'],
    ]);
  });

  it('resizes and sets trusted sources by PATCH: storage only grows, sources are addresses, blocks or server ids', async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'resized', region: 'fra1', trusted_sources: [{ type: 'ip_addr', value: '203.0.113.7' }] }))
      .body.data;
    expect(db.trusted_sources).toEqual([{ type: 'ip_addr', value: '203.0.113.7' }]);
    await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    const resized = await t.api('PATCH', `/api/v1/databases/${db.id}`, { size: 'db-s-2vcpu-4gb', num_nodes: 2, storage_gb: 20 });
    expect(resized.status).toBe(200);
    expect(resized.body.data).toMatchObject({ size: 'db-s-2vcpu-4gb', num_nodes: 2, storage_gb: 20 });
    await eventually(async () => (await t.api('GET', `/api/v1/databases/${db.id}`)).body.data.standby_nodes === 1);
    const shrink = await t.api('PATCH', `/api/v1/databases/${db.id}`, { storage_gb: 10 });
    expect([shrink.status, shrink.body.error.code, shrink.body.error.details[0].field]).toEqual([422, 'validation_failed', 'storage_gb']);
    const bad = await t.api('PATCH', `/api/v1/databases/${db.id}`, { trusted_sources: [{ type: 'ip_addr', value: '10.0.0.1/8' }] });
    expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'trusted_sources[0].value']);
    const set = await t.api('PATCH', `/api/v1/databases/${db.id}`, {
      trusted_sources: [
        { type: 'ip_addr', value: '10.0.0.0/8' },
        { type: 'server', value: 'srv_00000000000000000000' },
      ],
    });
    expect(set.body.data.trusted_sources).toHaveLength(2);
  });

  it('takes backups under /databases/{id}/backups (backup.* events) and restores one into a new database', async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'kept', region: 'fra1', version: '16' })).body.data;
    await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    await t.api('POST', `/api/v1/databases/${db.id}/dbs`, { name: 'reports' });
    const taken = await t.api('POST', `/api/v1/databases/${db.id}/backups`, {});
    expect(taken.status).toBe(201);
    expect(taken.headers.get('location')).toBe(`/api/v1/databases/${db.id}/backups/${taken.body.data.id}`);
    expect(taken.body.data).toMatchObject({ database_id: db.id, server_id: null, name: expect.stringMatching(/^kept-\d{8}T\d{6}Z$/) });
    const backup = await waitForStatus(t, `/api/v1/databases/${db.id}/backups/${taken.body.data.id}`, 'completed');
    expect((await t.api('GET', `/api/v1/databases/${db.id}/backups`)).body.data.map((b: { id: string }) => b.id)).toEqual([backup.id]);
    await eventually(async () => {
      const page = await t.api('GET', `/api/v1/audit-log?resource_id=${backup.id}`);
      return page.body.data.some((e: { type: string }) => e.type === 'backup.completed');
    });

    const mismatch = await t.api('POST', '/api/v1/databases', { name: 'copy', region: 'fra1', version: '15', backup_restore: { backup_id: backup.id } });
    expect([mismatch.status, mismatch.body.error.details[0].field]).toEqual([422, 'version']);
    const restored = await t.api('POST', '/api/v1/databases', { name: 'copy', region: 'fra1', backup_restore: { backup_id: backup.id } });
    expect(restored.status).toBe(201);
    expect(restored.body.data).toMatchObject({ version: '16', db_names: ['defaultdb', 'reports'], backup_restore: { backup_id: backup.id } });
    await waitForStatus(t, `/api/v1/databases/${restored.body.data.id}`, 'running');

    // A server's restore route takes no database backup; a database's backup is not found under another database.
    expect((await t.api('GET', `/api/v1/databases/${restored.body.data.id}/backups/${backup.id}`)).body.error.code).toBe('backup_not_found');
    const deleted = await t.api('DELETE', `/api/v1/databases/${db.id}/backups/${backup.id}`);
    expect([deleted.status, deleted.body.data.status]).toEqual([200, 'deleted']);
  });

  it('deletes: deleted at once, and a deleted one keeps its password unshown (409 on reset)', async () => {
    const db = (await t.api('POST', '/api/v1/databases', { name: 'scratch', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/databases/${db.id}`, 'running');
    const deleted = await t.api('DELETE', `/api/v1/databases/${db.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    const reset = await t.api('POST', `/api/v1/databases/${db.id}/reset-password`);
    expect([reset.status, reset.body.error.code]).toEqual([409, 'invalid_state']);
  });
});

describe('databases: the daily backup policy (a "day" of two seconds)', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ CLOUDPLANE_BACKUP_POLICY_DAY_MS: '2000' });
  });
  afterAll(async () => t.stop());

  it('makes a backup at each of the policy’s times, keeps the newest `retain`, and stops when PATCH removes it', async () => {
    const created = await t.api('POST', '/api/v1/databases', { name: 'nightly', region: 'fra1', backup_policy: { enabled: true, time: '00:00', retain: 2 } });
    expect(created.status).toBe(201);
    expect(created.body.data.backup_policy).toEqual({ enabled: true, time: '00:00', retain: 2 });
    const { id } = created.body.data;
    const seen = new Set<string>();
    const policyBackups = async () => {
      const page = await t.api('GET', `/api/v1/databases/${id}/backups?limit=100`);
      const ofPolicy = page.body.data.filter((b: { trigger: string }) => b.trigger === 'policy');
      for (const b of ofPolicy) seen.add(b.id);
      return ofPolicy;
    };
    await eventually(async () => (await policyBackups(), seen.size >= 3), 60_000, 200);
    expect((await policyBackups()).every((b: { database_id: string; name: string }) => b.database_id === id && b.name.startsWith('nightly-daily-'))).toBe(true);
    await eventually(async () => (await policyBackups()).length <= 2, 30_000, 200);

    const patched = await t.api('PATCH', `/api/v1/databases/${id}`, { backup_policy: null });
    expect(patched.body.data.backup_policy).toBeNull();
    const kept = await t.api('PATCH', `/api/v1/databases/${id}`, { storage_gb: 20 });
    expect(kept.body.data.backup_policy).toBeNull();
    const again = await t.api('PATCH', `/api/v1/databases/${id}`, { backup_policy: { enabled: false, time: '03:30' } });
    expect(again.body.data.backup_policy).toEqual({ enabled: false, time: '03:30', retain: 7 });
  });
});

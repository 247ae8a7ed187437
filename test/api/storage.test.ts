import { startTestService, TestService, waitForStatus } from '../helpers/service';

describe('object storage and file storage', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it('creates a bucket that becomes available with an endpoint, and deletes it', async () => {
    const created = await t.api('POST', '/api/v1/object-storage', { name: 'assets-1', region: 'ams3', public: true });
    expect(created.status).toBe(201);
    const bucket = created.body.data;
    expect(bucket).toMatchObject({ name: 'assets-1', region: 'ams3', public: true, status: 'creating', endpoint: null });
    expect(bucket.id).toMatch(/^bkt_/);
    const available = await waitForStatus(t, `/api/v1/object-storage/${bucket.id}`, 'available');
    expect(available.endpoint).toMatch(/^https:\/\//);
    // Nothing observes a simulated bucket's objects: no data.* events for it.
    expect(available.data_events).toBe(false);
    const deleted = await t.api('DELETE', `/api/v1/object-storage/${bucket.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
    // A deleted bucket's name can be taken again.
    expect((await t.api('POST', '/api/v1/object-storage', { name: 'assets-1', region: 'ams3' })).status).toBe(201);
  });

  it('deletes a simulated bucket, always empty, without force; takes ?force=true too, and refuses another force', async () => {
    const plain = (await t.api('POST', '/api/v1/object-storage', { name: 'sim-plain', region: 'fra1' })).body.data;
    const forced = (await t.api('POST', '/api/v1/object-storage', { name: 'sim-forced', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/object-storage/${plain.id}`, 'available');
    await waitForStatus(t, `/api/v1/object-storage/${forced.id}`, 'available');
    expect((await t.api('DELETE', `/api/v1/object-storage/${plain.id}`)).status).toBe(200);
    const bad = await t.api('DELETE', `/api/v1/object-storage/${forced.id}?force=maybe`);
    expect({ status: bad.status, field: bad.body.error.details?.[0]?.field }).toEqual({ status: 422, field: 'force' });
    expect((await t.api('DELETE', `/api/v1/object-storage/${forced.id}?force=true`)).status).toBe(200);
    // Under the simulated driver a bucket has no name on an endpoint.
    expect((await t.api('GET', `/api/v1/object-storage/${forced.id}`)).body.data.s3_bucket).toBeNull();
  });

  it('keeps bucket names unique per team, even under concurrent creates', async () => {
    const results = await Promise.all([1, 2, 3, 4].map(() => t.api('POST', '/api/v1/object-storage', { name: 'unique-one', region: 'fra1' })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    expect(results.find((r) => r.status === 409)!.body.error.code).toBe('name_taken');
  });

  it.each(['ab', 'Upper-Case', '-leading', 'trailing-', 'under_score', 'a'.repeat(64)])('refuses the bucket name %s', async (name) => {
    const res = await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details[0].field).toBe('name');
  });

  it('makes a bucket public and private again by PATCH, and refuses to rename it', async () => {
    const bucket = (await t.api('POST', '/api/v1/object-storage', { name: 'flip', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/object-storage/${bucket.id}`, 'available');
    const opened = await t.api('PATCH', `/api/v1/object-storage/${bucket.id}`, { public: true });
    expect(opened.status).toBe(200);
    expect(opened.body.data).toMatchObject({ id: bucket.id, name: 'flip', public: true });
    const closed = await t.api('PATCH', `/api/v1/object-storage/${bucket.id}`, { public: false });
    expect(closed.body.data.public).toBe(false);
    const renamed = await t.api('PATCH', `/api/v1/object-storage/${bucket.id}`, { name: 'other' });
    expect(renamed.status).toBe(422);
    expect(renamed.body.error.code).toBe('validation_failed');
    expect(renamed.body.error.details[0].field).toBe('name');
  });

  it('creates a file share with the default size and a mount target', async () => {
    const created = await t.api('POST', '/api/v1/file-storage', { name: 'shared home', region: 'nyc1' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ size_gb: 100, protocol: 'nfs', status: 'creating', mount_target: null });
    expect(created.body.data.id).toMatch(/^fs_/);
    const available = await waitForStatus(t, `/api/v1/file-storage/${created.body.data.id}`, 'available');
    expect(available.mount_target).toMatch(/^10\.200\.\d+\.\d+:\/exports\/fs_/);
    const missing = await t.api('GET', '/api/v1/file-storage/fs_0000000000000000');
    expect(missing.body.error.code).toBe('file_share_not_found');
  });

  it.each([9, 16385, 10.5, '100'])('refuses size_gb %p', async (size_gb) => {
    const res = await t.api('POST', '/api/v1/file-storage', { name: 'bad', region: 'fra1', size_gb });
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: any) => d.field)).toContain('size_gb');
  });

  it('lists with status filter and sort by name', async () => {
    for (const name of ['zeta', 'alpha', 'mid']) await t.api('POST', '/api/v1/file-storage', { name, region: 'fra1' });
    const res = await t.api('GET', '/api/v1/file-storage?sort=name&order=asc&limit=100');
    const names = res.body.data.map((s: any) => s.name);
    expect(names).toEqual([...names].sort());
    expect(res.body.meta.next_cursor).toBeNull();
  });
});

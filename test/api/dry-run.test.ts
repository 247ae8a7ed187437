/**
 * `?dry_run=true` on create, update and delete (docs/api.md, "Trying a change first:
 * dry_run"): judged as for real (schema, unique names, quotas, If-Match, what a deletion
 * would destroy), answered with the resource as the change would leave it and
 * `meta.dry_run: true`, and nothing stored, claimed or sent. Runs on both stores.
 */
import { startTestService, TestService, waitForStatus } from '../helpers/service';
import { LOAD_BALANCER as LB, runningLoadBalancer as running } from '../helpers/load-balancers';

jest.setTimeout(60_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000', CLOUDPLANE_QUOTAS: 'bucket=2' });
});
afterAll(async () => t?.stop());

const idsOf = async (path: string): Promise<string[]> => (await t.api('GET', `${path}?limit=100`)).body.data.map((r: { id: string }) => r.id).sort();

const runningLoadBalancer = (name: string) => running(t, name);

describe('a dry-run create', () => {
  it('answers the resource in its first state and stores nothing', async () => {
    const before = await idsOf('/api/v1/load-balancers');
    const tried = await t.api('POST', '/api/v1/load-balancers?dry_run=true', { ...LB, name: 'only-tried' });
    expect(tried.status).toBe(201);
    expect(tried.body.meta.dry_run).toBe(true);
    expect(tried.body.data).toMatchObject({ name: 'only-tried', status: 'creating', algorithm: 'round_robin' });
    expect(tried.headers.get('location')).toBeNull();
    expect(tried.headers.get('etag')).toBeNull();
    expect((await t.api('GET', `/api/v1/load-balancers/${tried.body.data.id}`)).status).toBe(404);
    expect(await idsOf('/api/v1/load-balancers')).toEqual(before);
    // A real create's answer says nothing of dry runs.
    const real = await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'made' });
    expect(real.body.meta.dry_run).toBeUndefined();
  });

  it('refuses what a real create would refuse: a bad body, a name taken, a quota full', async () => {
    const bad = await t.api('POST', '/api/v1/load-balancers?dry_run=true', { ...LB, name: 'bad', port: 70_000 });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');

    expect((await t.api('POST', '/api/v1/object-storage', { name: 'dry-taken', region: 'fra1' })).status).toBe(201);
    const taken = await t.api('POST', '/api/v1/object-storage?dry_run=true', { name: 'dry-taken', region: 'fra1' });
    expect({ status: taken.status, code: taken.body.error.code }).toEqual({ status: 409, code: 'name_taken' });

    // One bucket of two is there: a dry run fits, and holds no room once answered.
    const fits = await t.api('POST', '/api/v1/object-storage?dry_run=true', { name: 'dry-second', region: 'fra1' });
    expect(fits.status).toBe(201);
    expect((await t.api('POST', '/api/v1/object-storage', { name: 'dry-second', region: 'fra1' })).status).toBe(201);
    const full = await t.api('POST', '/api/v1/object-storage?dry_run=true', { name: 'dry-third', region: 'fra1' });
    expect({ status: full.status, code: full.body.error.code }).toEqual({ status: 422, code: 'quota_exceeded' });
  });

  it('shows no generated secret, which the real create would make anew', async () => {
    const tried = await t.api('POST', '/api/v1/databases?dry_run=true', { name: 'tried-db', region: 'fra1' });
    expect(tried.status).toBe(201);
    expect(tried.body.meta.dry_run).toBe(true);
    expect(tried.body.data.password).toBeUndefined();
    expect(await idsOf('/api/v1/databases')).not.toContain(tried.body.data.id);
  });

  it('neither takes nor replays an Idempotency-Key: the real request after it does the work', async () => {
    const headers = { 'idempotency-key': 'dry-then-real' };
    const tried = await t.api('POST', '/api/v1/load-balancers?dry_run=true', { ...LB, name: 'keyed' }, { headers });
    expect(tried.status).toBe(201);
    const real = await t.api('POST', '/api/v1/load-balancers', { ...LB, name: 'keyed' }, { headers });
    expect(real.status).toBe(201);
    expect(real.headers.get('idempotent-replayed')).toBeNull();
    expect(real.body.meta.dry_run).toBeUndefined();
    expect((await t.api('GET', `/api/v1/load-balancers/${real.body.data.id}`)).status).toBe(200);
  });
});

describe('a dry-run update', () => {
  it('answers the spec as it would be and leaves the resource as it is', async () => {
    const { id, etag } = await runningLoadBalancer('to-change');
    const tried = await t.api('PATCH', `/api/v1/load-balancers/${id}?dry_run=true`, { algorithm: 'least_connections' }, { headers: { 'if-match': etag } });
    expect(tried.status).toBe(200);
    expect(tried.body.meta.dry_run).toBe(true);
    expect(tried.body.data.algorithm).toBe('least_connections');
    const now = await t.api('GET', `/api/v1/load-balancers/${id}`);
    expect(now.body.data.algorithm).toBe('round_robin');
    expect(now.headers.get('etag')).toBe(etag);
  });

  it('refuses a stale If-Match with 412, as the update would', async () => {
    const { id } = await runningLoadBalancer('stale-version');
    const tried = await t.api('PATCH', `/api/v1/load-balancers/${id}?dry_run=true`, { algorithm: 'least_connections' }, { headers: { 'if-match': '"0"' } });
    expect({ status: tried.status, code: tried.body.error.code }).toEqual({ status: 412, code: 'precondition_failed' });
  });
});

describe('a dry-run delete', () => {
  it('answers what the delete then answers, and deletes nothing', async () => {
    const { id } = await runningLoadBalancer('to-delete');
    const tried = await t.api('DELETE', `/api/v1/load-balancers/${id}?dry_run=true`);
    expect(tried.body.meta.dry_run).toBe(true);
    const now = await t.api('GET', `/api/v1/load-balancers/${id}`);
    expect(now.body.data.status).toBe('running');
    expect(now.body.data.deleted_at).toBeNull();
    const real = await t.api('DELETE', `/api/v1/load-balancers/${id}`);
    expect(real.status).toBe(tried.status);
    expect(real.body.data.status).toBe(tried.body.data.status);
    expect(['deleting', 'deleted']).toContain(real.body.data.status);
  });

  it('refuses, as the delete would, a file share a server still lists', async () => {
    const share = await t.api('POST', '/api/v1/file-storage', { name: 'still-used', region: 'fra1' });
    const server = await t.api('POST', '/api/v1/servers', { name: 'user-of-share', region: 'fra1' });
    await waitForStatus(t, `/api/v1/file-storage/${share.body.data.id}`, 'available', 30_000);
    await waitForStatus(t, `/api/v1/servers/${server.body.data.id}`, 'running', 30_000);
    expect((await t.api('POST', `/api/v1/file-storage/${share.body.data.id}/attach`, { server_id: server.body.data.id })).status).toBe(200);
    const tried = await t.api('DELETE', `/api/v1/file-storage/${share.body.data.id}?dry_run=true`);
    expect({ status: tried.status, code: tried.body.error.code }).toEqual({ status: 409, code: 'resource_busy' });
  });

  it('answers 404 for what is not there', async () => {
    const tried = await t.api('DELETE', '/api/v1/load-balancers/lb-nothere?dry_run=true');
    expect(tried.status).toBe(404);
  });
});

/**
 * File shares on servers: attach and detach (the server lists its mounts), the errors of
 * each, and deletion of a share still attached. On the
 * embedded store by default, and on a real kube-apiserver with CLOUDPLANE_TEST_STORE=kubernetes;
 * the drivers are the simulated ones (test/integration/file-shares-cluster.test.ts runs
 * the kubernetes ones).
 */
import { createTeam } from '../../src/accounts/bootstrap';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';

describe('file shares attached to servers', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  const newShare = async (name: string, region = 'fra1', size_gb?: number) => {
    const created = await t.api('POST', '/api/v1/file-storage', { name, region, ...(size_gb ? { size_gb } : {}) });
    expect(created.status).toBe(201);
    return waitForStatus(t, `/api/v1/file-storage/${created.body.data.id}`, 'available');
  };
  const newServer = async (name: string, region = 'fra1') => {
    const created = await t.api('POST', '/api/v1/servers', { name, region });
    expect(created.status).toBe(201);
    return waitForStatus(t, `/api/v1/servers/${created.body.data.id}`, 'running');
  };
  const attach = (shareId: string, server_id: unknown) => t.api('POST', `/api/v1/file-storage/${shareId}/attach`, { server_id });
  const detach = (shareId: string, server_id: unknown) => t.api('POST', `/api/v1/file-storage/${shareId}/detach`, { server_id });
  const eventsOf = async (id: string, type: string) =>
    (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=${type}`)).body.data as Array<{ data: any }>;

  it('a new server has no mounts', async () => {
    const server = await newServer('plain');
    expect(server.mounts).toEqual([]);
  });

  it('attach mounts the share on the server at /mnt/file-storage/<id>; detach removes it; each is a server.updated', async () => {
    const share = await newShare('home');
    const server = await newServer('app');
    const attached = await attach(share.id, server.id);
    expect(attached.status).toBe(200);
    expect(attached.body.data).toMatchObject({ id: server.id, mounts: [{ file_share_id: share.id, mount_path: `/mnt/file-storage/${share.id}` }] });
    expect((await t.api('GET', `/api/v1/servers/${server.id}`)).body.data.mounts).toEqual([
      { file_share_id: share.id, mount_path: `/mnt/file-storage/${share.id}` },
    ]);
    const updated = await eventually(async () => {
      const events = await eventsOf(server.id, 'server.updated');
      return events.length === 1 ? events : null;
    });
    expect(updated[0].data.mounts).toEqual([{ file_share_id: share.id, mount_path: `/mnt/file-storage/${share.id}` }]);

    // A second share mounts beside the first.
    const other = await newShare('scratch');
    expect((await attach(other.id, server.id)).body.data.mounts.map((m: any) => m.file_share_id)).toEqual([share.id, other.id]);

    const detached = await detach(share.id, server.id);
    expect(detached.status).toBe(200);
    expect(detached.body.data.mounts).toEqual([{ file_share_id: other.id, mount_path: `/mnt/file-storage/${other.id}` }]);
    await eventually(async () => (await eventsOf(server.id, 'server.updated')).length === 3);
  });

  it('one share mounts on several servers', async () => {
    const share = await newShare('shared');
    const [a, b] = await Promise.all([newServer('web-a'), newServer('web-b')]);
    expect((await attach(share.id, a.id)).status).toBe(200);
    expect((await attach(share.id, b.id)).status).toBe(200);
    for (const server of [a, b]) {
      expect((await t.api('GET', `/api/v1/servers/${server.id}`)).body.data.mounts).toEqual([
        { file_share_id: share.id, mount_path: `/mnt/file-storage/${share.id}` },
      ]);
    }
  });

  it('answers the contract codes for what cannot be attached or detached', async () => {
    const share = await newShare('errors');
    const server = await newServer('target');
    const expectError = (res: { status: number; body: any }, status: number, code: string) =>
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status, code });

    expectError(await attach('fs_0000000000000000', server.id), 404, 'file_share_not_found');
    expectError(await attach(share.id, 'svr_0000000000000000'), 404, 'server_not_found');
    expectError(await t.api('POST', `/api/v1/file-storage/${share.id}/attach`, {}), 422, 'validation_failed');
    expectError(await attach(share.id, 42), 422, 'validation_failed');
    expectError(await detach(share.id, server.id), 409, 'invalid_state');

    expect((await attach(share.id, server.id)).status).toBe(200);
    expectError(await attach(share.id, server.id), 409, 'backend_already_attached');

    // Another region: the share mounts only in its own.
    const far = await newServer('far', 'nyc1');
    const crossRegion = await attach(share.id, far.id);
    expectError(crossRegion, 422, 'validation_failed');
    expect(crossRegion.body.error.details[0].field).toBe('server_id');

    // A deleted server takes nothing more.
    const gone = await newServer('gone');
    expect((await t.api('DELETE', `/api/v1/servers/${gone.id}`)).status).toBe(200);
    expectError(await attach(share.id, gone.id), 409, 'invalid_state');

    // A deleted share is attached nowhere any more.
    const deletedShare = await newShare('deleted-share');
    expect((await t.api('DELETE', `/api/v1/file-storage/${deletedShare.id}`)).status).toBe(200);
    expectError(await attach(deletedShare.id, server.id), 409, 'invalid_state');
  });

  it("sees nothing of another team's: its servers and shares are 404 both ways, and stay untouched", async () => {
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' });
    const theirApi = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key: other.token });
    const theirShare = (await theirApi('POST', '/api/v1/file-storage', { name: 'theirs', region: 'fra1' })).body.data;
    const theirServer = (await theirApi('POST', '/api/v1/servers', { name: 'theirs', region: 'fra1' })).body.data;
    await waitForStatus({ api: (m, p, b, o) => t.api(m, p, b, { ...o, key: other.token }) }, `/api/v1/servers/${theirServer.id}`, 'running');
    const myShare = await newShare('mine');
    const myServer = await newServer('mine');
    const codeOf = (res: { status: number; body: any }) => ({ status: res.status, code: res.body.error?.code });

    // Mine onto theirs, theirs onto mine, and theirs onto theirs through my key.
    expect(codeOf(await attach(myShare.id, theirServer.id))).toEqual({ status: 404, code: 'server_not_found' });
    expect(codeOf(await attach(theirShare.id, myServer.id))).toEqual({ status: 404, code: 'file_share_not_found' });
    expect(codeOf(await detach(theirShare.id, theirServer.id))).toEqual({ status: 404, code: 'file_share_not_found' });
    expect(codeOf(await theirApi('POST', `/api/v1/file-storage/${theirShare.id}/attach`, { server_id: myServer.id }))).toEqual({
      status: 404,
      code: 'server_not_found',
    });
    // A load balancer's backend likewise: their server is not mine to attach.
    const myBalancer = (await t.api('POST', '/api/v1/load-balancers', { name: 'mine', region: 'fra1' })).body.data;
    expect(codeOf(await t.api('POST', `/api/v1/load-balancers/${myBalancer.id}/attach`, { server_id: theirServer.id }))).toEqual({
      status: 404,
      code: 'server_not_found',
    });
    expect(codeOf(await theirApi('POST', `/api/v1/load-balancers/${myBalancer.id}/attach`, { server_id: theirServer.id }))).toEqual({
      status: 404,
      code: 'load_balancer_not_found',
    });

    expect((await theirApi('GET', `/api/v1/servers/${theirServer.id}`)).body.data.mounts).toEqual([]);
    expect((await t.api('GET', `/api/v1/servers/${myServer.id}`)).body.data.mounts).toEqual([]);
  });

  it('a share still attached cannot be deleted (409 resource_busy) until it is detached, or its server deleted', async () => {
    const share = await newShare('busy');
    const server = await newServer('holder');
    expect((await attach(share.id, server.id)).status).toBe(200);
    const refused = await t.api('DELETE', `/api/v1/file-storage/${share.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('resource_busy');
    expect(refused.body.error.message).toContain(server.id);
    expect((await t.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.status).toBe('available');

    expect((await detach(share.id, server.id)).status).toBe(200);
    expect((await t.api('DELETE', `/api/v1/file-storage/${share.id}`)).status).toBe(200);

    // Deleting the server detaches its shares: nothing holds the share any more.
    const kept = await newShare('kept');
    const doomed = await newServer('doomed');
    expect((await attach(kept.id, doomed.id)).status).toBe(200);
    expect((await t.api('DELETE', `/api/v1/servers/${doomed.id}`)).status).toBe(200);
    const deleted = await t.api('DELETE', `/api/v1/file-storage/${kept.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.status).toBe('deleted');
  });
});

describe('attaching a share that is not available yet', () => {
  let t: TestService;
  beforeAll(async () => {
    // Provisioning takes a minute here: the share stays `creating` through the test.
    t = await startTestService({ CLOUDPLANE_SIM_DELAY_MS: '60000' });
  });
  afterAll(async () => t.stop());

  it('is 409 resource_busy while the share is creating', async () => {
    const share = (await t.api('POST', '/api/v1/file-storage', { name: 'slow', region: 'fra1' })).body.data;
    const server = (await t.api('POST', '/api/v1/servers', { name: 'early', region: 'fra1' })).body.data;
    expect(share.status).toBe('creating');
    const res = await t.api('POST', `/api/v1/file-storage/${share.id}/attach`, { server_id: server.id });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 409, code: 'resource_busy' });
    expect((await t.api('GET', `/api/v1/servers/${server.id}`)).body.data.mounts).toEqual([]);
  });
});

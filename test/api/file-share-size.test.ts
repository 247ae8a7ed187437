/**
 * A file share's size: it grows by PATCH and never shrinks (422 validation_failed), on
 * the embedded store by default and on a real kube-apiserver with
 * CLOUDPLANE_TEST_STORE=kubernetes. The kubernetes driver's expansion of the claim is
 * tested in test/integration/file-shares-cluster.test.ts.
 */
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';

describe('file share size', () => {
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
  const eventsOf = async (id: string, type: string) =>
    (await t.api('GET', `/api/v1/audit-log?resource_id=${id}&type=${type}`)).body.data as Array<{ data: any }>;

  it('a share grows by PATCH, emitting file_share.updated, and never shrinks (422 validation_failed)', async () => {
    const share = await newShare('growing', 'fra1', 20);
    const grown = await t.api('PATCH', `/api/v1/file-storage/${share.id}`, { size_gb: 50 });
    expect(grown.status).toBe(200);
    expect(grown.body.data.size_gb).toBe(50);
    await eventually(async () => (await eventsOf(share.id, 'file_share.updated')).some((e) => e.data.size_gb === 50));

    const shrink = await t.api('PATCH', `/api/v1/file-storage/${share.id}`, { size_gb: 30 });
    expect(shrink.status).toBe(422);
    expect(shrink.body.error.code).toBe('validation_failed');
    expect(shrink.body.error.details).toEqual([expect.objectContaining({ field: 'size_gb' })]);
    expect((await t.api('GET', `/api/v1/file-storage/${share.id}`)).body.data.size_gb).toBe(50);

    // The same size is no change, and the bounds still hold.
    expect((await t.api('PATCH', `/api/v1/file-storage/${share.id}`, { size_gb: 50 })).status).toBe(200);
    expect((await t.api('PATCH', `/api/v1/file-storage/${share.id}`, { size_gb: 16385 })).status).toBe(422);
    expect((await t.api('PATCH', `/api/v1/file-storage/${share.id}`, { region: 'ams3' })).status).toBe(422);
  });
});

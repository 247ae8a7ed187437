/**
 * `?dry_run=true` on the actions that change a resource's spec (docs/api.md, "Trying a
 * change first: dry_run"): each is judged as for real (the state it needs, its body,
 * If-Match) and answered as the real action would answer, with `meta.dry_run: true`, while
 * the resource stays at the version it was: its ETag unchanged, so nothing was written (and
 * events are only written with a resource's write). Runs on both stores.
 */
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { runningLoadBalancer } from '../helpers/load-balancers';

jest.setTimeout(120_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(async () => t?.stop());

const etagOf = async (path: string): Promise<string> => String((await t.api('GET', path)).headers.get('etag'));

async function made(path: string, body: unknown, state: string): Promise<{ id: string; url: string }> {
  const created = await t.api('POST', path, body);
  expect(created.status).toBe(201);
  const url = `${path}/${created.body.data.id}`;
  await waitForStatus(t, url, state, 60_000);
  return { id: created.body.data.id, url };
}

/**
 * Tries `method path` as a dry run: answered `status` with `meta.dry_run`, and the resource
 * at `watched` (the one the action changes) still at its version. The reconciler's own
 * writes (a backend's health, say) may move the version meanwhile: the try is made again,
 * up to three times, while one that wrote would move it every time. Answers the body's data.
 */
async function tried(method: 'POST' | 'PATCH' | 'DELETE', path: string, body: unknown, status: number, watched: string): Promise<any> {
  let before = '';
  let after = '';
  for (let attempt = 1; attempt <= 3; attempt++) {
    before = await etagOf(watched);
    const answer = await t.api(method, `${path}?dry_run=true`, body);
    expect({ status: answer.status, dryRun: answer.body?.meta?.dry_run }).toEqual({ status, dryRun: status === 204 ? undefined : true });
    expect(answer.headers.get('etag')).toBeNull();
    expect(answer.headers.get('location')).toBeNull();
    after = await etagOf(watched);
    if (after === before) return answer.body?.data;
  }
  expect(after).toBe(before);
}

describe('dry runs of actions', () => {
  it("stop, start and reboot a server: the move it would begin, the server's state left as it is", async () => {
    const server = await made('/api/v1/servers', { name: 'dry-power', region: 'fra1' }, 'running');
    expect(await tried('POST', `${server.url}/stop`, undefined, 200, server.url)).toMatchObject({ id: server.id, status: 'stopping' });
    expect(await tried('POST', `${server.url}/reboot`, undefined, 200, server.url)).toMatchObject({ status: 'rebooting' });
    // Refused as the real start is: the server runs.
    const start = await t.api('POST', `${server.url}/start?dry_run=true`);
    const real = await t.api('POST', `${server.url}/start`);
    expect({ status: start.status, code: start.body.error.code }).toEqual({ status: real.status, code: real.body.error.code });
    expect(start.status).toBe(409);
    expect((await t.api('GET', server.url)).body.data.status).toBe('running');
  });

  it('attach and detach a load balancer backend: the backends as they would be', async () => {
    const server = await made('/api/v1/servers', { name: 'dry-backend', region: 'fra1' }, 'running');
    const { id } = await runningLoadBalancer(t, 'dry-lb');
    const url = `/api/v1/load-balancers/${id}`;
    const attached = await tried('POST', `${url}/attach`, { server_id: server.id, port: 8080 }, 200, url);
    expect(attached.backends).toEqual([expect.objectContaining({ server_id: server.id, port: 8080 })]);
    expect((await t.api('GET', url)).body.data.backends).toEqual([]);
    // A stale If-Match is refused as for real.
    const stale = await t.api('POST', `${url}/attach?dry_run=true`, { server_id: server.id }, { headers: { 'if-match': '"0"' } });
    expect({ status: stale.status, code: stale.body.error.code }).toEqual({ status: 412, code: 'precondition_failed' });
    // Detaching a server that is not a backend is refused as for real.
    const detach = await t.api('POST', `${url}/detach?dry_run=true`, { server_id: server.id });
    expect({ status: detach.status, code: detach.body.error.code }).toEqual({ status: 404, code: 'backend_not_found' });
    expect((await t.api('POST', `${url}/attach`, { server_id: server.id })).status).toBe(200);
    // Detached, a backend drains first, as the real detach's answer shows it.
    const detached = await tried('POST', `${url}/detach`, { server_id: server.id }, 200, url);
    expect(detached.backends).toEqual([expect.objectContaining({ server_id: server.id, status: 'draining' })]);
    expect((await t.api('GET', url)).body.data.backends).toEqual([
      expect.objectContaining({ server_id: server.id, status: expect.not.stringMatching('draining') }),
    ]);
  });

  it('attach a file share: the server with the share mounted', async () => {
    const server = await made('/api/v1/servers', { name: 'dry-mount', region: 'fra1' }, 'running');
    const share = await made('/api/v1/file-storage', { name: 'dry-share', region: 'fra1' }, 'available');
    const shown = await tried('POST', `${share.url}/attach`, { server_id: server.id }, 200, server.url);
    expect(shown).toMatchObject({ id: server.id, mounts: [expect.objectContaining({ file_share_id: share.id })] });
    expect((await t.api('GET', server.url)).body.data.mounts).toEqual([]);
  });

  it('pause, resume and cancel a job', async () => {
    const scheduled = await made('/api/v1/jobs', { name: 'dry-tick', command: 'echo tick', schedule: '0 0 1 1 *' }, 'scheduled');
    expect(await tried('POST', `${scheduled.url}/pause`, undefined, 200, scheduled.url)).toMatchObject({ status: 'paused', next_run_at: null });
    expect(await tried('POST', `${scheduled.url}/cancel`, undefined, 200, scheduled.url)).toMatchObject({ status: 'cancelled' });
    expect((await t.api('GET', scheduled.url)).body.data.status).toBe('scheduled');
    // Resuming a scheduled job changes nothing, dry or not.
    expect(await tried('POST', `${scheduled.url}/resume`, undefined, 200, scheduled.url)).toMatchObject({ status: 'scheduled' });
  });

  it('upgrade a Kubernetes cluster and change its node pools: the state and pools it would have', async () => {
    const pool = { name: 'workers', size: 's-2vcpu-4gb', count: 2 };
    const cluster = await made('/api/v1/kubernetes-clusters', { name: 'dry-k8s', region: 'fra1', version: '1.32', node_pools: [pool] }, 'running');
    expect(await tried('POST', `${cluster.url}/upgrade`, { version: '1.33' }, 200, cluster.url)).toMatchObject({ status: 'upgrading', version: '1.32' });
    const older = await t.api('POST', `${cluster.url}/upgrade?dry_run=true`, { version: '1.31' });
    expect({ status: older.status, code: older.body.error.code }).toEqual({ status: 422, code: 'validation_failed' });
    expect(await tried('POST', `${cluster.url}/node-pools`, { name: 'more', size: 's-2vcpu-4gb', count: 1 }, 201, cluster.url)).toMatchObject({
      name: 'more',
      count: 1,
    });
    expect(await tried('PATCH', `${cluster.url}/node-pools/workers`, { count: 4 }, 200, cluster.url)).toMatchObject({ name: 'workers', count: 4 });
    // The last pool cannot go, dry or not.
    const last = await t.api('DELETE', `${cluster.url}/node-pools/workers?dry_run=true`);
    expect({ status: last.status, code: last.body.error.code }).toEqual({ status: 409, code: 'invalid_state' });
    const shown = (await t.api('GET', cluster.url)).body.data;
    expect({ version: shown.version, pools: shown.node_pools.map((p: { name: string; count: number }) => [p.name, p.count]) }).toEqual({
      version: '1.32',
      pools: [['workers', 2]],
    });
  });

  it('restore a backup onto its server: the restore it would begin', async () => {
    const server = await made('/api/v1/servers', { name: 'dry-restore', region: 'fra1' }, 'running');
    const backup = await t.api('POST', `${server.url}/backups`, { name: 'before' });
    expect(backup.status).toBe(201);
    const backupUrl = `${server.url}/backups/${backup.body.data.id}`;
    await waitForStatus(t, backupUrl, 'completed', 60_000);
    const shown = await tried('POST', `${server.url}/restore`, { backup_id: backup.body.data.id }, 200, backupUrl);
    expect(shown).toMatchObject({ id: backup.body.data.id, status: 'completed', restore_status: 'restoring' });
    expect((await t.api('GET', server.url)).body.data.status).toBe('running');
  });

  it('acknowledge and resolve an incident', async () => {
    expect((await t.api('POST', '/api/v1/alert-policies', { name: 'dry-jobs', condition: { type: 'job_failed' } })).status).toBe(201);
    await made('/api/v1/jobs', { name: 'dry-broken', command: 'exit 3' }, 'failed');
    const incident = await eventually(async () => (await t.api('GET', '/api/v1/incidents?status=open')).body.data[0], 60_000, 250);
    const url = `/api/v1/incidents/${incident.id}`;
    expect(await tried('POST', `${url}/acknowledge`, undefined, 200, url)).toMatchObject({ status: 'acknowledged' });
    expect(await tried('POST', `${url}/resolve`, undefined, 200, url)).toMatchObject({ status: 'resolved' });
    expect((await t.api('GET', url)).body.data.status).toBe('open');
  });
});

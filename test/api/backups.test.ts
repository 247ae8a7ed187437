/**
 * Server backups and restores (docs/api.md, Server backups): create, list, get, delete and
 * restore through the API; the five backup.* events, in order, at a real receiver; the
 * server `restoring` meanwhile; the errors; viewers refused; backups deleted with their
 * server; and the daily backup policy, on a "day" shortened to two seconds
 * (CLOUDPLANE_BACKUP_POLICY_DAY_MS), as scheduled jobs are tested on per-second schedules.
 */
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { eventsOf, Receiver, startReceiver } from '../helpers/receiver';
import { clusterMode } from '../helpers/cluster';

const WEBHOOK_ENV = { CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true', CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
// A backup and a restore each take 1.5 to 2.5 s: long enough to be seen under way.
// In cluster mode backups go through the kubernetes driver: servers here are simulated (no
// Pod, no claim) and the test API server has no snapshot API, so it takes them the simulated
// way and says so in `method` (test/integration/backup-snapshots.test.ts shows the snapshots).
const ENV = {
  ...WEBHOOK_ENV,
  CLOUDPLANE_SIM_DELAYS: 'backup=4000',
  CLOUDPLANE_BACKUP_POLICY_DAY_MS: '2000',
  ...(clusterMode() ? { CLOUDPLANE_DRIVER_BACKUP: 'kubernetes' } : {}),
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function subscribe(t: TestService, receiver: Receiver): Promise<void> {
  const res = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['backup.*'] });
  expect(res.status).toBe(201);
}

const receivedFor = (receiver: Receiver, id: string) =>
  eventsOf(receiver)
    .filter((e) => e.data.id === id)
    .sort((a, b) => a.created_at.localeCompare(b.created_at));

describe('server backups', () => {
  let t: TestService;
  let receiver: Receiver;
  let server: string;

  const runningServer = async (name: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await t.api('POST', '/api/v1/servers', { name, region: 'fra1', ...extra });
    expect(res.status).toBe(201);
    await waitForStatus(t, `/api/v1/servers/${res.body.data.id}`, 'running', 30_000);
    return res.body.data.id;
  };
  const completedBackup = async (serverId: string, body: Record<string, unknown> = {}): Promise<any> => {
    const res = await t.api('POST', `/api/v1/servers/${serverId}/backups`, body);
    expect(res.status).toBe(201);
    return waitForStatus(t, `/api/v1/servers/${serverId}/backups/${res.body.data.id}`, 'completed', 30_000);
  };
  const listAll = async (serverId: string, query = ''): Promise<any[]> => {
    const res = await t.api('GET', `/api/v1/servers/${serverId}/backups?limit=100${query}`);
    expect(res.status).toBe(200);
    return res.body.data;
  };

  beforeAll(async () => {
    t = await startTestService(ENV);
    receiver = await startReceiver();
    await subscribe(t, receiver);
    server = await runningServer('backed-up');
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  it('takes a backup, lists and reads it, restores it with the server restoring, and emits the four events in order', async () => {
    const created = await t.api('POST', `/api/v1/servers/${server}/backups`, { name: 'before-upgrade' });
    expect(created.status).toBe(201);
    const backup = created.body.data;
    expect(created.headers.get('location')).toBe(`/api/v1/servers/${server}/backups/${backup.id}`);
    expect(backup).toMatchObject({
      name: 'before-upgrade',
      server_id: server,
      status: 'creating',
      trigger: 'manual',
      scheduled_at: null,
      completed_at: null,
      restore_status: null,
    });
    expect(backup.id).toMatch(/^bkp_[0-9a-z]{16,26}$/);
    expect(created.body.meta.provider).toBe('connected');

    // While it is taken, it cannot be restored.
    const early = await t.api('POST', `/api/v1/servers/${server}/restore`, { backup_id: backup.id });
    expect([early.status, early.body.error?.code]).toEqual([409, 'resource_busy']);

    const done = await waitForStatus(t, `/api/v1/servers/${server}/backups/${backup.id}`, 'completed', 30_000);
    expect(done).toMatchObject({ method: 'simulated', status_reason: null });
    expect(Date.parse(done.completed_at)).toBeGreaterThanOrEqual(Date.parse(backup.created_at));
    expect((await listAll(server)).map((b) => b.id)).toContain(backup.id);
    expect((await listAll(server, '&status=completed')).every((b) => b.status === 'completed')).toBe(true);

    const restored = await t.api('POST', `/api/v1/servers/${server}/restore`, { backup_id: backup.id });
    expect(restored.status).toBe(200);
    expect(restored.body.data).toMatchObject({ id: backup.id, status: 'completed', restore_status: 'restoring' });
    // The answer came once the server showed the restore: it cannot be stopped, deleted or backed up under it.
    expect((await t.api('GET', `/api/v1/servers/${server}`)).body.data.status).toBe('restoring');
    for (const [method, path, body] of [
      ['POST', `/api/v1/servers/${server}/stop`, undefined],
      ['DELETE', `/api/v1/servers/${server}`, undefined],
      ['PATCH', `/api/v1/servers/${server}`, { name: 'renamed' }],
      ['POST', `/api/v1/servers/${server}/backups`, {}],
      ['POST', `/api/v1/servers/${server}/restore`, { backup_id: backup.id }],
      ['DELETE', `/api/v1/servers/${server}/backups/${backup.id}`, undefined],
    ] as const) {
      const res = await t.api(method, path, body);
      expect([method, path, res.status, res.body.error?.code]).toEqual([method, path, 409, 'resource_busy']);
    }

    const after = await eventually(async () => {
      const current = (await t.api('GET', `/api/v1/servers/${server}/backups/${backup.id}`)).body.data;
      return current.restore_status === 'succeeded' ? current : null;
    }, 30_000);
    expect(Date.parse(after.restore_finished_at)).toBeGreaterThanOrEqual(Date.parse(after.restore_started_at));
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 30_000);

    const types = await eventually(async () => {
      const seen = receivedFor(receiver, backup.id).map((e) => e.type);
      return seen.includes('backup.restore_completed') ? seen : null;
    }, 30_000);
    expect(types).toEqual(['backup.created', 'backup.completed', 'backup.restore_started', 'backup.restore_completed']);
    const last = receivedFor(receiver, backup.id).at(-1);
    expect(last.data).toMatchObject({ id: backup.id, server_id: server, restore_status: 'succeeded' });
    expect(receivedFor(receiver, backup.id)[2].data.restore_status).toBe('restoring');
  });

  it("pages a server's backups like every list, and shows only that server's", async () => {
    const other = await runningServer('paged');
    const made: string[] = [];
    for (const name of ['one', 'two', 'three']) made.push((await completedBackup(other, { name })).id);
    const first = await t.api('GET', `/api/v1/servers/${other}/backups?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.meta.next_cursor).toEqual(expect.any(String));
    const second = await t.api('GET', `/api/v1/servers/${other}/backups?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
    expect(second.body.data).toHaveLength(1);
    expect(second.body.meta.next_cursor).toBeNull();
    expect([...first.body.data, ...second.body.data].map((b: any) => b.id).sort()).toEqual([...made].sort());
    expect((await t.api('GET', `/api/v1/servers/${other}/backups?limit=0`)).status).toBe(422);
    expect((await t.api('GET', `/api/v1/servers/${other}/backups?cursor=tampered`)).body.error.code).toBe('invalid_cursor');
    expect((await listAll(server)).some((b) => made.includes(b.id))).toBe(false);

    // A backup deleted is `deleted` in the answer, then gone.
    const deleted = await t.api('DELETE', `/api/v1/servers/${other}/backups/${made[0]}`);
    expect([deleted.status, deleted.body.data.status]).toEqual([200, 'deleted']);
    await eventually(async () => (await t.api('GET', `/api/v1/servers/${other}/backups/${made[0]}`)).status === 404);
  });

  it("answers unknown servers and backups, another server's backup and a bad body with the contract's errors", async () => {
    const missingServer = 'svr_0000000000000000';
    for (const [method, path, body] of [
      ['POST', `/api/v1/servers/${missingServer}/backups`, {}],
      ['GET', `/api/v1/servers/${missingServer}/backups`, undefined],
      ['GET', `/api/v1/servers/${missingServer}/backups/bkp_0000000000000000`, undefined],
      ['POST', `/api/v1/servers/${missingServer}/restore`, { backup_id: 'bkp_0000000000000000' }],
    ] as const) {
      const res = await t.api(method, path, body);
      expect([path, res.status, res.body.error?.code]).toEqual([path, 404, 'server_not_found']);
    }
    const unknown = await t.api('GET', `/api/v1/servers/${server}/backups/bkp_0000000000000000`);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'backup_not_found']);
    const restoreUnknown = await t.api('POST', `/api/v1/servers/${server}/restore`, { backup_id: 'bkp_0000000000000000' });
    expect([restoreUnknown.status, restoreUnknown.body.error.code]).toEqual([404, 'backup_not_found']);

    const other = await runningServer('other');
    const theirs = await completedBackup(other);
    const crossed = await t.api('POST', `/api/v1/servers/${server}/restore`, { backup_id: theirs.id });
    expect([crossed.status, crossed.body.error.code]).toEqual([422, 'validation_failed']);
    expect(crossed.body.error.details).toEqual([{ field: 'backup_id', message: expect.stringContaining(other) }]);
    // Not one of this server's: not found under it either.
    expect((await t.api('GET', `/api/v1/servers/${server}/backups/${theirs.id}`)).body.error.code).toBe('backup_not_found');

    const missingField = await t.api('POST', `/api/v1/servers/${server}/restore`, {});
    expect([missingField.status, missingField.body.error.code]).toEqual([422, 'validation_failed']);
    const extra = await t.api('POST', `/api/v1/servers/${server}/backups`, { name: 'x', colour: 'red' });
    expect([extra.status, extra.body.error.code]).toEqual([422, 'validation_failed']);

    // Onto a stopped server: invalid_state; a stopped server can still be backed up.
    expect((await t.api('POST', `/api/v1/servers/${other}/stop`)).status).toBe(200);
    await waitForStatus(t, `/api/v1/servers/${other}`, 'stopped', 30_000);
    const ontoStopped = await t.api('POST', `/api/v1/servers/${other}/restore`, { backup_id: theirs.id });
    expect([ontoStopped.status, ontoStopped.body.error.code]).toEqual([409, 'invalid_state']);
    await completedBackup(other);
  });

  it('refuses backups and restores to a viewer, who may read them', async () => {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email: 'viewer@backups.example', role: 'viewer' });
    expect(invited.status).toBe(201);
    const key = await t.api('POST', '/api/v1/settings/api-keys', { name: 'viewer key', user_id: invited.body.data.id });
    expect(key.status).toBe(201);
    const asViewer = { key: key.body.data.key };
    const [backup] = await listAll(server);
    for (const [method, path, body] of [
      ['POST', `/api/v1/servers/${server}/backups`, {}],
      ['POST', `/api/v1/servers/${server}/restore`, { backup_id: backup.id }],
      ['DELETE', `/api/v1/servers/${server}/backups/${backup.id}`, undefined],
    ] as const) {
      const res = await t.api(method, path, body, asViewer);
      expect([path, res.status, res.body.error?.code]).toEqual([path, 403, 'forbidden']);
    }
    expect((await t.api('GET', `/api/v1/servers/${server}/backups`, undefined, asViewer)).status).toBe(200);
    expect((await t.api('GET', `/api/v1/servers/${server}/backups/${backup.id}`, undefined, asViewer)).status).toBe(200);
  });

  it("deletes a server's backups with the server", async () => {
    const doomed = await runningServer('doomed');
    const backup = await completedBackup(doomed);
    const deleted = await t.api('DELETE', `/api/v1/servers/${doomed}`);
    expect(deleted.status).toBe(200);
    await eventually(async () => (await t.api('GET', `/api/v1/servers/${doomed}/backups/${backup.id}`)).status === 404, 30_000);
    expect(await listAll(doomed, '&status=deleted')).toEqual([]);
  });

  it("makes one backup a day at the policy's time and keeps the newest `retain` of them", async () => {
    const create = await t.api('POST', '/api/v1/servers', { name: 'daily', region: 'fra1', backup_policy: { enabled: true, time: '00:00', retain: 2 } });
    expect(create.status).toBe(201);
    expect(create.body.data.backup_policy).toEqual({ enabled: true, time: '00:00', retain: 2 });
    const daily = create.body.data.id;
    await waitForStatus(t, `/api/v1/servers/${daily}`, 'running', 30_000);
    const manual = await completedBackup(daily, { name: 'kept' });

    // Every policy backup seen; a "day" is two seconds here.
    const seen = new Map<string, string>();
    const look = async () => {
      const current = (await listAll(daily)).filter((b) => b.trigger === 'policy');
      for (const b of current) seen.set(b.id, b.scheduled_at);
      return current;
    };
    await eventually(async () => (await look(), seen.size >= 4), 60_000, 200);
    const times = [...new Set(seen.values())].sort();
    expect(times).toHaveLength(seen.size);
    for (const time of times) expect(Date.parse(time) % 2000).toBe(0);
    // The oldest went beyond `retain`; the manual backup stays.
    const kept = await eventually(
      async () => {
        const current = await look();
        return current.length <= 2 ? current : null;
      },
      30_000,
      200,
    );
    expect(kept.every((b) => times.slice(-3).includes(b.scheduled_at))).toBe(true);
    await eventually(async () => (await t.api('GET', `/api/v1/servers/${daily}/backups/${[...seen.keys()][0]}`)).status === 404, 30_000);
    expect((await t.api('GET', `/api/v1/servers/${daily}/backups/${manual.id}`)).body.data.status).toBe('completed');

    // PATCH changes the policy; null removes it, and the backups stop.
    const patched = await t.api('PATCH', `/api/v1/servers/${daily}`, { backup_policy: null });
    expect(patched.status).toBe(200);
    expect(patched.body.data.backup_policy).toBeNull();
    const atRemoval = (await look(), seen.size);
    await sleep(4_500);
    await look();
    // At most one for a time that came while the PATCH was being written.
    expect(seen.size).toBeLessThanOrEqual(atRemoval + 1);

    const refused = await t.api('PATCH', `/api/v1/servers/${daily}`, { backup_policy: { enabled: true, time: '25:00' } });
    expect([refused.status, refused.body.error.code]).toEqual([422, 'validation_failed']);
    const again = await t.api('PATCH', `/api/v1/servers/${daily}`, { backup_policy: { enabled: true, time: '03:30' } });
    expect(again.body.data.backup_policy).toEqual({ enabled: true, time: '03:30', retain: 7 });
  });
});

describe('server backups whose provider fails', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestService({ ...WEBHOOK_ENV, CLOUDPLANE_SIM_FAILURES: 'backup=1' });
    receiver = await startReceiver();
    await subscribe(t, receiver);
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  it('ends failed with a reason, emits backup.failed, and cannot be restored', async () => {
    const server = await t.api('POST', '/api/v1/servers', { name: 'unlucky', region: 'fra1' });
    await waitForStatus(t, `/api/v1/servers/${server.body.data.id}`, 'running', 30_000);
    const id = server.body.data.id;
    const created = await t.api('POST', `/api/v1/servers/${id}/backups`, {});
    expect(created.status).toBe(201);
    const failed = await waitForStatus(t, `/api/v1/servers/${id}/backups/${created.body.data.id}`, 'failed', 30_000);
    expect(failed.status_reason).toMatch(/^The backup failed: .*CLOUDPLANE_SIM_FAILURES/);
    const types = await eventually(async () => {
      const seen = receivedFor(receiver, failed.id).map((e) => e.type);
      return seen.includes('backup.failed') ? seen : null;
    }, 30_000);
    expect(types).toEqual(['backup.created', 'backup.failed']);
    const restore = await t.api('POST', `/api/v1/servers/${id}/restore`, { backup_id: failed.id });
    expect([restore.status, restore.body.error.code]).toEqual([409, 'invalid_state']);
    expect((await t.api('GET', `/api/v1/servers/${id}`)).body.data.status).toBe('running');
  });
});

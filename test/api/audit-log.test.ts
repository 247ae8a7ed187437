import { startTestService, TestService, waitForStatus, eventually } from '../helpers/service';
import type { LoadBalancer } from '../../src/resources/load-balancer';
import { ConflictError } from '../../src/store/types';
import { publishHistory } from '../helpers/audit-history';

describe('audit log', () => {
  let t: TestService;
  let lbId: string;
  beforeAll(async () => {
    t = await startTestService();
    lbId = (await t.api('POST', '/api/v1/load-balancers', { name: 'audited-web', region: 'fra1' })).body.data.id;
    await waitForStatus(t, `/api/v1/load-balancers/${lbId}`, 'running');
    await t.api('POST', '/api/v1/load-balancers', { name: 'other', region: 'ams3' });
    await t.api('DELETE', `/api/v1/load-balancers/${lbId}`);
    await eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${lbId}`)).body.data.length === 3);
  });
  afterAll(async () => t.stop());

  it('finds the events of a resource, newest first, with the actor', async () => {
    const res = await t.api('GET', `/api/v1/audit-log?resource_id=${lbId}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: any) => e.type)).toEqual(['load_balancer.deleted', 'load_balancer.running', 'load_balancer.created']);
    const [deleted, running, created] = res.body.data;
    expect(running.actor).toBe('system');
    expect(created.actor).toMatch(/^key_/);
    // The caller who deleted it, not the reconciler that finished the job.
    expect(deleted.actor).toBe(created.actor);
    expect(created).toMatchObject({ team_id: t.teamId, data: { id: lbId, name: 'audited-web' } });
  });

  it('filters by exact type, category wildcard, actor, free text and time', async () => {
    const exact = await t.api('GET', '/api/v1/audit-log?type=load_balancer.created');
    expect(exact.body.data.map((e: any) => e.data.name).sort()).toEqual(['audited-web', 'other']);
    const wildcard = await t.api('GET', '/api/v1/audit-log?type=load_balancer.*');
    expect(wildcard.body.data.length).toBeGreaterThanOrEqual(4);
    expect(wildcard.body.data.every((e: any) => e.type.startsWith('load_balancer.'))).toBe(true);
    const bySystem = await t.api('GET', '/api/v1/audit-log?actor=system&type=load_balancer.*');
    expect(bySystem.body.data.every((e: any) => e.actor === 'system')).toBe(true);
    const text = await t.api('GET', '/api/v1/audit-log?q=AUDITED');
    expect(text.body.data.length).toBe(3);
    const future = await t.api('GET', `/api/v1/audit-log?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(future.body.data).toEqual([]);
    const past = await t.api('GET', `/api/v1/audit-log?until=${encodeURIComponent('2000-01-01T00:00:00Z')}`);
    expect(past.body.data).toEqual([]);
  });

  it('pages with a cursor and rejects bad queries', async () => {
    const first = await t.api('GET', '/api/v1/audit-log?limit=2&order=asc');
    expect(first.body.data).toHaveLength(2);
    const all = await t.api('GET', '/api/v1/audit-log?limit=100&order=asc');
    const second = await t.api('GET', `/api/v1/audit-log?limit=2&order=asc&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
    expect(second.body.data.map((e: any) => e.id)).toEqual(all.body.data.slice(2, 4).map((e: any) => e.id));
    expect((await t.api('GET', '/api/v1/audit-log?cursor=nonsense')).body.error.code).toBe('invalid_cursor');
    const bad = await t.api('GET', '/api/v1/audit-log?since=yesterday&limit=500');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');
  });

  it('goes on page by page through a history a text search matches rarely', async () => {
    // More events than one page may look at (2,000), the only match the oldest of them.
    await publishHistory(t.service.ctx.bus, t.teamId, 2_500, 'needle-in-history');
    await eventually(async () => (await t.api('GET', '/api/v1/audit-log?q=needle-in-history&order=asc')).body.data.length === 1);
    const first = await t.api('GET', '/api/v1/audit-log?q=needle-in-history');
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([]);
    expect(first.body.meta.next_cursor).toEqual(expect.any(String));
    const found: string[] = [];
    let cursor: string | null = first.body.meta.next_cursor;
    for (let pages = 0; cursor !== null; pages++) {
      expect(pages).toBeLessThan(5);
      const page = await t.api('GET', `/api/v1/audit-log?q=needle-in-history&cursor=${encodeURIComponent(cursor)}`);
      expect(page.status).toBe(200);
      found.push(...page.body.data.map((e: any) => e.id));
      cursor = page.body.meta.next_cursor;
    }
    expect(found).toEqual(['evt_history000000']);
  });

  it("shows only the caller team's events", async () => {
    const { createTeam } = await import('../../src/accounts/bootstrap');
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' });
    const res = await t.api('GET', `/api/v1/audit-log?resource_id=${lbId}`, undefined, { key: other.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });
});

describe('audit log: who asked for a change the reconciler carries out', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t.stop());

  it('names who asked for an attach, a detach or an update, though the reconciler carries them out', async () => {
    const lb = (await t.api('POST', '/api/v1/load-balancers', { name: 'attached', region: 'fra1' })).body.data;
    const server = (await t.api('POST', '/api/v1/servers', { name: 'backend-1', region: 'fra1' })).body.data;
    await waitForStatus(t, `/api/v1/load-balancers/${lb.id}`, 'running');
    await waitForStatus(t, `/api/v1/servers/${server.id}`, 'running');
    const eventOf = (type: string) => eventually(async () => (await t.api('GET', `/api/v1/audit-log?resource_id=${lb.id}&type=${type}`)).body.data[0]);
    const created = await eventOf('load_balancer.created');
    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/attach`, { server_id: server.id })).status).toBe(200);
    expect((await eventOf('load_balancer.backend_attached')).actor).toBe(created.actor);
    expect((await t.api('PATCH', `/api/v1/load-balancers/${lb.id}`, { algorithm: 'least_connections' })).status).toBe(200);
    expect((await eventOf('load_balancer.updated')).actor).toBe(created.actor);
    expect((await t.api('POST', `/api/v1/load-balancers/${lb.id}/detach`, { server_id: server.id })).status).toBe(200);
    expect((await eventOf('load_balancer.backend_detached')).actor).toBe(created.actor);
    expect(created.actor).toMatch(/^key_/);
    // Named as people read it: the key's name and its owner's, and the resource with its name.
    const key = (await t.api('GET', '/api/v1/settings/api-keys')).body.data.find((k: { id: string }) => k.id === created.actor);
    const owner = (await t.api('GET', '/api/v1/settings/profile')).body.data;
    expect(created).toMatchObject({ actor_name: `${key.name} (${owner.name})`, resource_id: lb.id, resource_name: 'attached' });
    const running = await eventOf('load_balancer.running');
    expect(running).toMatchObject({ actor: 'system', actor_name: 'system' });

    // A change made outside the API (a kubectl edit of the custom resource) names no one: system.
    const before = (await t.api('GET', `/api/v1/audit-log?resource_id=${lb.id}&type=load_balancer.updated`)).body.data.length;
    // As kubectl does: read, edit, write back; a write that lost to the reconciler's is made again on the newer version.
    await eventually(async () => {
      const stored = await t.service.ctx.store.get<LoadBalancer['spec'], LoadBalancer['status']>('LoadBalancer', t.teamId, lb.id);
      try {
        await t.service.ctx.store.update({ ...stored!, spec: { ...stored!.spec, port: 8080 } });
        return true;
      } catch (err) {
        if (err instanceof ConflictError) return false;
        throw err;
      }
    });
    const edited = await eventually(async () => {
      const page = (await t.api('GET', `/api/v1/audit-log?resource_id=${lb.id}&type=load_balancer.updated`)).body.data;
      return page.length > before ? page[0] : null;
    });
    expect(edited.actor).toBe('system');
  });
});

/**
 * One conflict model (docs/api.md, "Versions: ETag and If-Match"): a resource's answers
 * carry its version as an ETag; a PATCH or DELETE sent with If-Match is made only while the
 * resource is at that version, else 412 precondition_failed and nothing changes. Runs on
 * both stores; in cluster mode the ETag is the custom resource's resourceVersion, and a
 * kubectl-style write with a version read before a REST change gets the API server's 409.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';
import { clusterFor, clusterMode, kubeConfigOf } from '../helpers/cluster';
import { objectNameForId } from '../../src/lib/ids';

jest.setTimeout(60_000);

const LB = { region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/health', sticky_sessions: false };

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(async () => t?.stop());

async function runningLoadBalancer(name: string): Promise<string> {
  const created = await t.api('POST', '/api/v1/load-balancers', { ...LB, name });
  expect(created.status).toBe(201);
  expect(created.headers.get('etag')).toMatch(/^"[^"]+"$/);
  await waitForStatus(t, `/api/v1/load-balancers/${created.body.data.id}`, 'running', 30_000);
  return created.body.data.id;
}

const read = (id: string) => t.api('GET', `/api/v1/load-balancers/${id}`);
/** A change of the load balancer's health check path (its name cannot be changed). */
const rename = (id: string, check: string, ifMatch?: string) =>
  t.api('PATCH', `/api/v1/load-balancers/${id}`, { health_check_path: `/${check}` }, ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } });
const checkOf = async (id: string) => ((await read(id)).body.data.health_check_path as string).slice(1);

/** A PATCH with the version just read: retried when a write of the service's own (a reconciler's) came in between. */
const renameAtCurrentVersion = (id: string, check: string) =>
  eventually(async () => {
    const tag = (await read(id)).headers.get('etag')!;
    const answer = await rename(id, check, tag);
    return answer.status === 200 ? { answer, tag } : null;
  }, 20_000);

/** A change sent with the version just read of `path`: retried when a write of the service's own (a reconciler's) came in between. */
const atCurrentVersion = (path: string, change: (tag: string) => ReturnType<TestService['api']>) =>
  eventually(async () => {
    const answer = await change((await t.api('GET', path)).headers.get('etag')!);
    if (answer.status === 412) return null;
    expect(answer.status).toBeLessThan(300);
    return answer;
  }, 20_000);

describe('ETag and If-Match', () => {
  it("tags every answer of a resource with its version, the custom resource's resourceVersion in cluster mode", async () => {
    const id = await runningLoadBalancer('tagged');
    const tag = (await read(id)).headers.get('etag');
    expect(tag).toMatch(/^"[^"]+"$/);
    expect((await read(id)).headers.get('etag')).toBe(tag);
    if (clusterMode()) {
      const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
      const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'loadbalancers', name: objectNameForId(id) };
      await eventually(async () => {
        const cr: any = await custom.getNamespacedCustomObject(where);
        return (await read(id)).headers.get('etag') === `"${cr.metadata.resourceVersion}"`;
      });
    }
    const { answer } = await renameAtCurrentVersion(id, 'tagged-2');
    expect(answer.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(answer.headers.get('etag')).not.toBe(tag);
  });

  it('makes the second of two clients editing the same version fail with 412, and keeps the first one’s change', async () => {
    const id = await runningLoadBalancer('contested');
    const { tag: seenByBoth } = await renameAtCurrentVersion(id, 'first-writer');
    const second = await rename(id, 'second-writer', seenByBoth);
    expect(second.status).toBe(412);
    expect(second.body.error.code).toBe('precondition_failed');
    expect(second.body.error.message).toMatch(/changed since/);
    expect(await checkOf(id)).toBe('first-writer');
    // Several tags, one of them current, pass; `*` passes; a weak tag never does.
    const current = (await read(id)).headers.get('etag')!;
    const weak = await rename(id, 'weakly', `W/${current}`);
    expect(weak.status).toBe(412);
    expect((await rename(id, 'any-version', '*')).status).toBe(200);
    expect(await checkOf(id)).toBe('any-version');
    await eventually(async () => {
      const now = (await read(id)).headers.get('etag')!;
      return (await rename(id, 'listed', `"0", ${now}`)).status === 200;
    }, 20_000);
    expect(await checkOf(id)).toBe('listed');
  });

  it('deletes only at the version If-Match names', async () => {
    const id = await runningLoadBalancer('to-delete');
    const stale = (await read(id)).headers.get('etag')!;
    await renameAtCurrentVersion(id, 'to-delete-renamed');
    const refused = await t.api('DELETE', `/api/v1/load-balancers/${id}`, undefined, { headers: { 'if-match': stale } });
    expect(refused.status).toBe(412);
    expect(refused.body.error.code).toBe('precondition_failed');
    expect((await read(id)).body.data.status).toBe('running');
    const deleted = await eventually(async () => {
      const tag = (await read(id)).headers.get('etag')!;
      const answer = await t.api('DELETE', `/api/v1/load-balancers/${id}`, undefined, { headers: { 'if-match': tag } });
      return answer.status === 200 || answer.status === 202 ? answer : null;
    }, 20_000);
    expect(['deleting', 'deleted']).toContain(deleted.body.data.status);
  });

  it('takes If-Match on actions and named parts, whose answers carry the version they leave', async () => {
    const lb = await runningLoadBalancer('with-actions');
    const server = (await t.api('POST', '/api/v1/servers', { name: 'backend', region: 'fra1' })).body.data.id as string;
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 30_000);

    // An attach with a version someone else's change left behind: 412, and no backend.
    const stale = (await read(lb)).headers.get('etag')!;
    await renameAtCurrentVersion(lb, 'changed-first');
    const refused = await t.api('POST', `/api/v1/load-balancers/${lb}/attach`, { server_id: server }, { headers: { 'if-match': stale } });
    expect(refused.status).toBe(412);
    expect(refused.body.error.code).toBe('precondition_failed');
    expect((await read(lb)).body.data.backends).toEqual([]);
    const attached = await atCurrentVersion(`/api/v1/load-balancers/${lb}`, (tag) =>
      t.api('POST', `/api/v1/load-balancers/${lb}/attach`, { server_id: server }, { headers: { 'if-match': tag } }),
    );
    expect(attached.body.data.backends).toEqual([expect.objectContaining({ server_id: server })]);
    expect(attached.headers.get('etag')).not.toBe(stale);

    // A power action, the same.
    const stop = await t.api('POST', `/api/v1/servers/${server}/stop`, undefined, { headers: { 'if-match': '"0"' } });
    expect(stop.status).toBe(412);
    expect((await t.api('GET', `/api/v1/servers/${server}`)).body.data.status).toBe('running');

    // A named part of a database: a user made only at the database's version.
    const db = (await t.api('POST', '/api/v1/databases', { name: 'versioned-db', region: 'fra1' })).body.data.id as string;
    await waitForStatus(t, `/api/v1/databases/${db}`, 'running', 30_000);
    const refusedUser = await t.api('POST', `/api/v1/databases/${db}/users`, { name: 'late' }, { headers: { 'if-match': '"0"' } });
    expect(refusedUser.status).toBe(412);
    expect(refusedUser.body).not.toHaveProperty('data');
    const users = await t.api('GET', `/api/v1/databases/${db}/users`);
    expect(users.body.data.map((u: { name: string }) => u.name)).toEqual(['dbadmin']);
    const made = await atCurrentVersion(`/api/v1/databases/${db}`, (tag) =>
      t.api('POST', `/api/v1/databases/${db}/users`, { name: 'app' }, { headers: { 'if-match': tag } }),
    );
    expect(made.status).toBe(201);
    // The part's answer names the database's version it left: the next change can be made with it, unless the service wrote since.
    const after = made.headers.get('etag')!;
    expect(after).toMatch(/^"[^"]+"$/);
    expect(users.headers.get('etag')).not.toBe(after);
  });

  it('takes If-Match on the settings and on webhook subscriptions', async () => {
    const profile = await t.api('GET', '/api/v1/settings/profile');
    const tag = profile.headers.get('etag')!;
    expect(tag).toMatch(/^"[^"]+"$/);
    await atCurrentVersion('/api/v1/settings/profile', (current) =>
      t.api('PATCH', '/api/v1/settings/profile', { name: 'First Writer' }, { headers: { 'if-match': current } }),
    );
    const late = await t.api('PATCH', '/api/v1/settings/profile', { name: 'Second Writer' }, { headers: { 'if-match': tag } });
    expect(late.status).toBe(412);
    expect((await t.api('GET', '/api/v1/settings/profile')).body.data.name).toBe('First Writer');

    const member = await t.api('POST', '/api/v1/settings/team/members', { email: 'versioned@example.com', role: 'member' });
    expect(member.status).toBe(201);
    const memberPath = `/api/v1/settings/team/members/${member.body.data.id}`;
    expect((await t.api('PATCH', memberPath, { role: 'viewer' }, { headers: { 'if-match': '"0"' } })).status).toBe(412);
    expect((await t.api('DELETE', memberPath, undefined, { headers: { 'if-match': '"0"' } })).status).toBe(412);
    expect((await t.api('GET', memberPath)).body.data).toMatchObject({ role: 'member', status: 'active' });
    const demoted = await atCurrentVersion(memberPath, (current) => t.api('PATCH', memberPath, { role: 'viewer' }, { headers: { 'if-match': current } }));
    expect(demoted.body.data.role).toBe('viewer');

    const hook = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/hooks', events: ['server.*'] });
    expect(hook.status).toBe(201);
    const hookPath = `/api/v1/webhooks/${hook.body.data.id}`;
    expect(hook.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect((await t.api('PATCH', hookPath, { events: ['load_balancer.*'] }, { headers: { 'if-match': '"0"' } })).status).toBe(412);
    expect((await t.api('POST', `${hookPath}/rotate-secret`, undefined, { headers: { 'if-match': '"0"' } })).status).toBe(412);
    expect((await t.api('DELETE', hookPath, undefined, { headers: { 'if-match': '"0"' } })).status).toBe(412);
    expect((await t.api('GET', hookPath)).body.data).toMatchObject({ events: ['server.*'] });
  });

  it('documents If-Match, the ETag and the 412 in the OpenAPI document', async () => {
    const doc = (await t.api('GET', '/api/v1/openapi.json')).body;
    const patch = doc.paths['/api/v1/load-balancers/{id}'].patch;
    expect(patch.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'if-match')).toBe(true);
    expect(patch.responses['412']).toBeDefined();
    expect(patch.responses['200'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers/{id}'].get.responses['200'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers'].post.responses['201'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers'].get.responses['200'].headers.ETag).toBeUndefined();

    // Every change under a resource that has a version takes If-Match, but for these, which change something else.
    const otherThanTheResource = new Set([
      'POST /api/v1/file-storage/{id}/attach', // changes the server (the answer is the server)
      'POST /api/v1/file-storage/{id}/detach',
      'POST /api/v1/servers/{id}/backups', // a backup is a resource of its own
      'DELETE /api/v1/servers/{id}/backups/{backup_id}',
      'POST /api/v1/databases/{id}/backups',
      'DELETE /api/v1/databases/{id}/backups/{backup_id}',
      'POST /api/v1/servers/{id}/restore', // writes the backup's restore request
      'POST /api/v1/webhooks/{id}/ping', // deliveries
      'POST /api/v1/webhooks/{id}/recover',
      'POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/retry',
      'POST /api/v1/webhooks/{id}/deliveries/{delivery_id}/answer',
    ]);
    const versioned = Object.keys(doc.paths).filter((path) =>
      Object.values<any>(doc.paths[path]).some((op) => op.parameters?.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'if-match')),
    );
    const resources = new Set(versioned.map((path) => /^(\/api\/v1\/.*?\{[^}]+\})/.exec(path)?.[1] ?? path));
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      // A singleton (the profile, the team) is one path; a resource `/x/{id}`, that path and those below it.
      if (![...resources].some((resource) => path === resource || (resource.endsWith('}') && path.startsWith(`${resource}/`)))) continue;
      for (const [method, op] of Object.entries<any>(item)) {
        if (method === 'get') continue;
        const key = `${method.toUpperCase()} ${path}`;
        const takes = op.parameters?.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'if-match') === true;
        expect({ key, takes, answers412: Boolean(op.responses['412']) }).toEqual({
          key,
          takes: !otherThanTheResource.has(key),
          answers412: !otherThanTheResource.has(key),
        });
      }
    }
  });

  (clusterMode() ? it : it.skip)('gives kubectl and REST one conflict model: each sees the other’s change as a conflict', async () => {
    const id = await runningLoadBalancer('shared');
    const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
    const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'loadbalancers', name: objectNameForId(id) };

    // kubectl read it, then a REST client changed it: kubectl's replace with what it read is a 409.
    const readByKubectl: any = await custom.getNamespacedCustomObject(where);
    await renameAtCurrentVersion(id, 'changed-over-rest');
    const stale = { ...readByKubectl, spec: { ...readByKubectl.spec, health_check_path: '/changed-by-kubectl' } };
    await expect(custom.replaceNamespacedCustomObject({ ...where, body: stale })).rejects.toMatchObject({ code: 409 });

    // A REST client read it, then kubectl changed it: the REST change with that ETag is a 412.
    const readOverRest = (await read(id)).headers.get('etag')!;
    await eventually(async () => {
      const current: any = await custom.getNamespacedCustomObject(where);
      const body = { ...current, spec: { ...current.spec, health_check_path: '/edited-with-kubectl' } };
      return custom.replaceNamespacedCustomObject({ ...where, body }).then(
        () => true,
        () => false,
      );
    });
    const refused = await rename(id, 'changed-over-rest-again', readOverRest);
    expect(refused.status).toBe(412);
    await eventually(async () => (await checkOf(id)) === 'edited-with-kubectl');
  });
});

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

  it('documents If-Match, the ETag and the 412 in the OpenAPI document', async () => {
    const doc = (await t.api('GET', '/api/v1/openapi.json')).body;
    const patch = doc.paths['/api/v1/load-balancers/{id}'].patch;
    expect(patch.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'if-match')).toBe(true);
    expect(patch.responses['412']).toBeDefined();
    expect(patch.responses['200'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers/{id}'].get.responses['200'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers'].post.responses['201'].headers.ETag).toBeDefined();
    expect(doc.paths['/api/v1/load-balancers'].get.responses['200'].headers.ETag).toBeUndefined();
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

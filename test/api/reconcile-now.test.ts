/**
 * Reconcile now and why-not-ready (docs/api.md, "Why a resource is not ready"): every
 * provider-backed record shows its conditions, the error its passes fail with and the last
 * ask for a pass it handled; `POST /{path}/{id}/reconcile` asks for a pass, at most once per
 * 10 s per resource, with If-Match. Runs on both stores; in cluster mode a kubectl user asks
 * the same way with the annotation. The error itself is tested against a real S3 endpoint
 * taken away (s3-buckets.test.ts).
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { eventually, startTestService, TestService } from '../helpers/service';
import { clusterFor, clusterMode, kubeConfigOf } from '../helpers/cluster';
import { objectNameForId } from '../../src/lib/ids';
import { runningLoadBalancer as running } from '../helpers/load-balancers';
import { createTeam } from '../../src/accounts/bootstrap';

jest.setTimeout(60_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(async () => t?.stop());

const runningLoadBalancer = async (name: string) => (await running(t, name)).id;

const read = (id: string) => t.api('GET', `/api/v1/load-balancers/${id}`);
const reconcile = (id: string, headers: Record<string, string> = {}) => t.api('POST', `/api/v1/load-balancers/${id}/reconcile`, undefined, { headers });

describe('why a resource is or is not ready', () => {
  it('shows the conditions of a running resource in its record and its list, with no reconcile error', async () => {
    const id = await runningLoadBalancer('ready-one');
    const { data } = (await read(id)).body;
    expect(data.reconcile_error).toBeNull();
    expect(data.last_handled_reconcile_at).toBeNull();
    const byType = Object.fromEntries(data.conditions.map((c: any) => [c.type, c]));
    expect(byType.Ready).toMatchObject({ status: 'True', reason: 'Running' });
    expect(byType.Synced).toMatchObject({ status: 'True', reason: 'ReconcileSuccess', message: '' });
    expect(Date.parse(byType.Ready.last_transition_time)).not.toBeNaN();
    const listed = (await t.api('GET', '/api/v1/load-balancers?limit=100')).body.data.find((lb: any) => lb.id === id);
    expect(listed.conditions).toEqual(data.conditions);
  });
});

describe('reconcile now', () => {
  it('queues a pass that records the ask it handled, and refuses another ask within 10 s', async () => {
    const id = await runningLoadBalancer('asked-now');
    const asked = await reconcile(id);
    expect(asked.status).toBe(202);
    expect(asked.body.data.id).toBe(id);
    expect(asked.headers.get('etag')).toMatch(/^"[^"]+"$/);
    const handled = await eventually(async () => (await read(id)).body.data.last_handled_reconcile_at as string | null, 20_000);
    expect(Date.parse(handled)).not.toBeNaN();
    expect((await read(id)).body.data.status).toBe('running');

    const again = await reconcile(id);
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe('rate_limit_exceeded');
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(again.headers.get('retry-after'))).toBeLessThanOrEqual(10);
    // The refused ask changed nothing: the handled one stays.
    expect((await read(id)).body.data.last_handled_reconcile_at).toBe(handled);
  });

  it('takes If-Match: an ask on a version no longer current is 412', async () => {
    const id = await runningLoadBalancer('asked-with-version');
    const stale = (await read(id)).headers.get('etag')!;
    const changed = await eventually(async () => {
      const tag = (await read(id)).headers.get('etag')!;
      const answer = await t.api('PATCH', `/api/v1/load-balancers/${id}`, { health_check_path: '/changed' }, { headers: { 'if-match': tag } });
      return answer.status === 200 ? answer : null;
    }, 20_000);
    expect(changed.headers.get('etag')).not.toBe(stale);
    const refused = await reconcile(id, { 'if-match': stale });
    expect(refused.status).toBe(412);
    expect(refused.body.error.code).toBe('precondition_failed');
  });

  it("answers 404 for another team's resource and for none", async () => {
    const other = await createTeam(t.service.ctx.writer, t.service.ctx.authenticator, { teamName: 'Other', ownerName: 'O', ownerEmail: 'o@example.com' });
    const id = await runningLoadBalancer('not-theirs');
    const foreign = await t.api('POST', `/api/v1/load-balancers/${id}/reconcile`, undefined, { key: other.token });
    expect(foreign.status).toBe(404);
    expect((await reconcile('lb_00000000000000000000000000')).status).toBe(404);
  });

  (clusterMode() ? it : it.skip)('takes the ask from kubectl as the annotation cloudplane.dev/reconcile-requested-at', async () => {
    const id = await runningLoadBalancer('asked-by-kubectl');
    const custom = kubeConfigOf(await clusterFor(t.dataDir)).makeApiClient(CustomObjectsApi);
    const where = { group: 'cloudplane.dev', version: 'v1alpha1', namespace: t.teamId.replace('_', '-'), plural: 'loadbalancers', name: objectNameForId(id) };
    const body = { metadata: { annotations: { 'cloudplane.dev/reconcile-requested-at': 'asked-with-kubectl-1' } } };
    await custom.patchNamespacedCustomObject({ ...where, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await eventually(async () => (await read(id)).body.data.last_handled_reconcile_at === 'asked-with-kubectl-1', 20_000);
    const cr: any = await custom.getNamespacedCustomObject(where);
    expect(cr.status.last_handled_reconcile_at).toBe('asked-with-kubectl-1');
  });
});

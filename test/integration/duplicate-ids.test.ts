/**
 * One id, one custom resource: a manifest copied with its labels (`kubectl get -o yaml`,
 * a new name, `kubectl apply`) carries its original's `cloudplane.dev/id`. On a real
 * kube-apiserver, with the real kubectl, the real service and two more Kubernetes stores
 * standing in for replicas: the original keeps its id on every one of them, the copy gets
 * one of its own and is adopted at once as new, and no store ever serves the copy under
 * the original's id, whether the copy arrives by watch or is listed (first) at a start.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { KubernetesStore } from '../../src/store/kubernetes/store';
import type { StoredObject } from '../../src/store/types';
import { newId, objectNameForId } from '../../src/lib/ids';
import { installCrds, kubeConfigOf, kubernetesStoreOn, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer, kubectlOn } from '../helpers/kube-apiserver';
import { eventually, startTestService, TestService, waitForStatus } from '../helpers/service';

jest.setTimeout(120_000);

const GROUP = 'cloudplane.dev';
const VERSION = 'v1alpha1';
const ID_LABEL = `${GROUP}/id`;
const STATUS_PENDING = `${GROUP}/status-pending`;
const CREATED_AT = `${GROUP}/created-at`;
/** The first status the API's create carries, sealed for the original alone. */
const FIRST_STATUS = `${GROUP}/first-status`;
/** Far longer than the file: a copy adopted at all was not held back by a copied mark. */
const GRACE_S = 600;
const SETTLE_MS = 30_000;
const LB_BODY = { region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/health', sticky_sessions: false };
const LB_SPEC = { ...LB_BODY, backends: [] };

let cluster: KubeApiServer;
let t: TestService;
let serviceStopped = false;
let custom: CustomObjectsApi;
let namespace: string;
const stores: KubernetesStore[] = [];

const kubectl = (...args: string[]) => kubectlOn(cluster.kubeconfigPath)(args);

/** A Kubernetes store of its own, as another replica has; `seen` records every event it emits. */
async function startReplica(): Promise<{ store: KubernetesStore; seen: StoredObject[] }> {
  const store = kubernetesStoreOn(cluster);
  const seen: StoredObject[] = [];
  // Listening before the first list: what start() itself caches is recorded too.
  store.watch((event) => seen.push(event.object));
  stores.push(store);
  await store.start();
  return { store, seen };
}

const specNamesUnder = (seen: StoredObject[], id: string) => new Set(seen.filter((o) => o.meta.id === id).map((o) => (o.spec as { name: string }).name));
const readLb = async (name: string): Promise<any> =>
  custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'loadbalancers', name });
const idOf = (object: any): string => object.metadata.labels?.[ID_LABEL];

beforeAll(async () => {
  cluster = await startKubeApiServer();
  await installCrds(cluster);
  t = await startTestService({
    ...storeEnvFor(cluster),
    CLOUDPLANE_SIM_DELAY_MS: '50',
    CLOUDPLANE_ADOPTION_GRACE_SECONDS: String(GRACE_S),
    CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '100000',
  });
  const kc = kubeConfigOf(cluster);
  custom = kc.makeApiClient(CustomObjectsApi);
  namespace = t.teamId.replace('_', '-');
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
});

afterAll(async () => {
  await Promise.all(stores.map((s) => s.stop()));
  if (!serviceStopped) await t?.stop();
  await cluster?.stop();
});

test("a kubectl copy of an API-made load balancer gets an id of its own, is adopted at once, and is never served under the original's id", async () => {
  const replicas = await Promise.all([startReplica(), startReplica()]);
  const created = await t.api('POST', '/api/v1/load-balancers', { ...LB_BODY, name: 'original-lb' });
  expect(created.status).toBe(201);
  const id: string = created.body.data.id;
  await waitForStatus(t, `/api/v1/load-balancers/${id}`, 'running', SETTLE_MS);

  // What a user does: get the YAML (JSON here, same fields), rename, drop the version (a create refuses one), apply.
  const manifest = JSON.parse(await kubectl('get', 'cplb', objectNameForId(id), '-n', namespace, '-o', 'json'));
  expect(manifest.metadata.annotations[FIRST_STATUS]).toEqual(expect.any(String));
  expect(manifest.metadata.annotations[CREATED_AT]).toEqual(expect.any(String));
  manifest.metadata.name = 'copied-lb';
  manifest.spec.name = 'copied-lb';
  delete manifest.metadata.resourceVersion;
  delete manifest.metadata.uid;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cp-dup-')), 'copy.json');
  fs.writeFileSync(file, JSON.stringify(manifest));
  await kubectl('apply', '-f', file, '-n', namespace);

  // Relabelled and adopted: status written long before the grace a copied mark would impose.
  const copy = await eventually(
    async () => {
      const object = await readLb('copied-lb');
      return idOf(object) !== id && object.status?.status ? object : null;
    },
    SETTLE_MS,
    100,
  );
  const copyId = idOf(copy);
  expect(copyId).toMatch(/^lb_[0-9a-z]{16,26}$/);
  expect(copy.metadata.labels[STATUS_PENDING]).toBeUndefined();
  expect(copy.metadata.annotations?.[CREATED_AT]).toBeUndefined();
  expect(copy.metadata.annotations?.[FIRST_STATUS]).toBeUndefined();
  expect(copy.metadata.finalizers).toContain(`${GROUP}/finalizer`);

  const copyRecord = await waitForStatus(t, `/api/v1/load-balancers/${copyId}`, 'running', SETTLE_MS);
  expect(copyRecord.name).toBe('copied-lb');
  // Its own creation time, not the one its manifest copied.
  expect(Date.parse(copyRecord.created_at)).toBeGreaterThanOrEqual(Date.parse(manifest.metadata.creationTimestamp));
  expect(copyRecord.created_at).not.toBe(manifest.metadata.annotations[CREATED_AT]);
  const original = await t.api('GET', `/api/v1/load-balancers/${id}`);
  expect(original.body.data.name).toBe('original-lb');
  expect(original.body.data.status).toBe('running');
  const listed = (await t.api('GET', '/api/v1/load-balancers?limit=100')).body.data.map((r: { id: string; name: string }) => `${r.id}=${r.name}`);
  expect(listed.sort()).toEqual([`${id}=original-lb`, `${copyId}=copied-lb`].sort());

  // Every replica agrees, and none ever showed the copy under the original's id.
  for (const { store, seen } of replicas) {
    await eventually(async () => (await store.get('LoadBalancer', t.teamId, copyId)) !== undefined, SETTLE_MS, 50);
    expect(((await store.get('LoadBalancer', t.teamId, id))!.spec as { name: string }).name).toBe('original-lb');
    expect(specNamesUnder(seen, id)).toEqual(new Set(['original-lb']));
    expect(specNamesUnder(seen, copyId)).toEqual(new Set(['copied-lb']));
  }
});

test('at a start, duplicates already there are sorted out before anything is served, whatever order they are listed in', async () => {
  const create = async (name: string, id: string, extra: { status?: Record<string, unknown> } = {}) => {
    const at = new Date().toISOString();
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'LoadBalancer',
      metadata: { name, labels: { [ID_LABEL]: id, [STATUS_PENDING]: 'true' }, annotations: { [CREATED_AT]: at }, finalizers: [`${GROUP}/finalizer`] },
      spec: { ...LB_SPEC, name },
    };
    const made: any = await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'loadbalancers', body });
    if (!extra.status) return made;
    return custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'loadbalancers',
      name,
      body: { ...made, status: extra.status },
    });
  };
  // A status as the service writes them, to be copied onto a copy.
  const donor = await t.api('POST', '/api/v1/load-balancers', { ...LB_BODY, name: 'status-donor' });
  await waitForStatus(t, `/api/v1/load-balancers/${donor.body.data.id}`, 'running', SETTLE_MS);
  const copiedStatus = (await readLb(objectNameForId(donor.body.data.id))).status;
  // Nothing else watching: only the store started below can sort these out.
  await Promise.all(stores.splice(0).map((s) => s.stop()));
  await t.stop();
  serviceStopped = true;

  // The oldest keeps its id: made a second before its copy, which is listed first (by name).
  const oldestId = newId('lb');
  await create('zz-oldest', oldestId);
  await new Promise((r) => setTimeout(r, 1100));
  await create('aa-younger-copy', oldestId, { status: copiedStatus });
  // Named after the id beats older: the copy was there first.
  const namedId = newId('lb');
  await create('aa-older-copy', namedId);
  await create(objectNameForId(namedId), namedId);

  const { store, seen } = await startReplica();
  // Complete on start, and right from the first event.
  expect(((await store.get('LoadBalancer', t.teamId, oldestId))!.spec as { name: string }).name).toBe('zz-oldest');
  expect(((await store.get('LoadBalancer', t.teamId, namedId))!.spec as { name: string }).name).toBe(objectNameForId(namedId));

  const relabelled = await Promise.all(
    ['aa-younger-copy', 'aa-older-copy'].map((name) =>
      eventually(
        async () => {
          const object = await readLb(name);
          return ![oldestId, namedId].includes(idOf(object)) ? object : null;
        },
        SETTLE_MS,
        100,
      ),
    ),
  );
  for (const object of relabelled) {
    expect(object.metadata.labels[STATUS_PENDING]).toBeUndefined();
    expect(object.metadata.annotations?.[CREATED_AT]).toBeUndefined();
    // A status written onto the copy is not taken for its own: adoption will start it afresh.
    expect(object.status?.status).toBeUndefined();
    const served = await eventually(async () => store.get('LoadBalancer', t.teamId, idOf(object)), SETTLE_MS, 50);
    expect((served.spec as { name: string }).name).toBe(object.metadata.name);
  }
  expect(specNamesUnder(seen, oldestId)).toEqual(new Set(['zz-oldest']));
  expect(specNamesUnder(seen, namedId)).toEqual(new Set([objectNameForId(namedId)]));
  const ids = (await store.list('LoadBalancer', t.teamId)).map((o) => o.meta.id);
  expect(new Set(ids).size).toBe(ids.length);

  // A copy deleted before it could be relabelled is not left hanging on the finalizer it copied.
  const doomedId = newId('lb');
  await store.stop();
  stores.splice(0);
  await create(objectNameForId(doomedId), doomedId);
  await create('doomed-copy', doomedId);
  await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'loadbalancers', name: 'doomed-copy' });
  const restarted = await startReplica();
  await eventually(
    async () =>
      readLb('doomed-copy').then(
        () => false,
        (err: { code?: number }) => err.code === 404,
      ),
    SETTLE_MS,
    100,
  );
  expect(((await restarted.store.get('LoadBalancer', t.teamId, doomedId))!.spec as { name: string }).name).toBe(objectNameForId(doomedId));
  expect(specNamesUnder(restarted.seen, doomedId)).toEqual(new Set([objectNameForId(doomedId)]));
});

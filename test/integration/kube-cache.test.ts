/**
 * What the Kubernetes store's cache reads and keeps, on a real kube-apiserver: a replica
 * starting on a collection larger than one list page sees all of it (the list follows
 * `continue` from page to page), and a write of a cached object, which the cache keeps
 * without `managedFields`, leaves the API server's record of field managers as it was,
 * and a create that loses to another replica's leaves the winner's object in the cache.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { families } from '../../src/resources/registry';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { loadConfig } from '../../src/config';
import { KubernetesStore } from '../../src/store/kubernetes/store';
import { GROUP, namespaceOfTeam, objectName, VERSION } from '../../src/store/kubernetes/names';
import { newId } from '../../src/lib/ids';
import { installCrds, kubeConfigOf, kubernetesStoreOn } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { ruleContextOf } from '../../src/events/catalog';
import { AlreadyExistsError } from '../../src/store/types';
import { startHoldingProxy } from '../helpers/holding-proxy';

jest.setTimeout(120_000);

const KIND = loadBalancerFamily.kind;
const config = loadConfig({});
const spec = (name: string) => ({ ...loadBalancerFamily.specFromCreate({ name, region: 'fra1' }, ruleContextOf(config)) });
const status = (state: string) => ({
  status: state,
  status_reason: null,
  observed_generation: 1,
  observed_config: '',
  deleted_at: null,
  conditions: [],
  pending_events: [],
  backends: [],
});
const PLURAL = families.find((f) => f.kind === KIND)!.plural;
const TEAM = newId('team');
let cluster: KubeApiServer;
const stores: KubernetesStore[] = [];

async function replica(listPageSize?: number, kubeConfig = kubeConfigOf(cluster)): Promise<KubernetesStore> {
  const store = kubernetesStoreOn(cluster, { listPageSize, kubeConfig });
  stores.push(store);
  await store.start();
  return store;
}

beforeAll(async () => {
  cluster = await startKubeApiServer();
  await installCrds(cluster);
});
afterAll(async () => {
  for (const store of stores) await store.stop();
  await cluster?.stop();
});

it('starts with every object and secret of a collection listed over several pages', async () => {
  const writer = await replica();
  const ids: string[] = [];
  for (let n = 0; n < 5; n++) {
    const id = newId('lb');
    ids.push(id);
    await writer.create({ meta: { kind: KIND, id, team: TEAM }, spec: spec(`paged-${n}`), status: status('running') });
    await writer.secrets.put(TEAM, `paged-secret-${n}`, { value: `v${n}` });
  }

  const reader = await replica(2);
  expect((await reader.list(KIND, TEAM)).map((o) => o.meta.id).sort()).toEqual([...ids].sort());
  for (let n = 0; n < 5; n++) expect(await reader.secrets.get(TEAM, `paged-secret-${n}`)).toEqual({ value: `v${n}` });
});

it("leaves the API server's field managers as they were when it writes a cached object", async () => {
  const store = await replica();
  const id = newId('lb');
  const created = await store.create({ meta: { kind: KIND, id, team: TEAM }, spec: spec('managed'), status: status('creating') });
  const custom = kubeConfigOf(cluster).makeApiClient(CustomObjectsApi);
  const where = { group: GROUP, version: VERSION, namespace: namespaceOfTeam(TEAM, 'cloudplane-system'), plural: PLURAL, name: objectName(id) };
  const managers = async () =>
    (((await custom.getNamespacedCustomObject(where)) as { metadata: { managedFields?: { subresource?: string }[] } }).metadata.managedFields ?? [])
      .map((m) => m.subresource ?? 'main')
      .sort();
  // The create is one write, its first status sealed in annotations; the first status write adds the status subresource's manager.
  expect(await managers()).toEqual(['main']);
  const first = await store.updateStatus(created);
  const before = await managers();
  expect(before).toEqual(['main', 'status']);

  const updated = await store.update({ ...first, spec: { ...first.spec, name: 'managed-renamed' } });
  await store.updateStatus({ ...updated, status: status('running') });
  expect(await managers()).toEqual(before);
});

it("takes in the other replica's object when its own create of the same id loses", async () => {
  // As on a busy machine: this replica's create is still in flight while its watch brings
  // the other's create; the losing create must leave the other's object readable at once.
  const proxy = await startHoldingProxy(cluster);
  try {
    const slow = await replica(undefined, proxy.kubeConfig);
    const fast = await replica();
    const id = newId('lb');
    proxy.hold((method, url) => method === 'POST' && url.includes(`/${PLURAL}`));
    const losing = slow.create({ meta: { kind: KIND, id, team: TEAM }, spec: spec('contested'), status: status('creating') });
    await until(() => proxy.held() === 1);
    await fast.create({ meta: { kind: KIND, id, team: TEAM }, spec: spec('contested'), status: status('running') });
    // Watch events of one kind come in order: once a later object is seen, so were the contested one's.
    const later = newId('lb');
    await fast.create({ meta: { kind: KIND, id: later, team: TEAM }, spec: spec('later'), status: status('running') });
    await until(async () => (await slow.get(KIND, TEAM, later)) !== undefined);
    proxy.release();
    await expect(losing).rejects.toBeInstanceOf(AlreadyExistsError);
    expect((await slow.get(KIND, TEAM, id))?.status).toMatchObject({ status: 'running' });
  } finally {
    await proxy.close();
  }
});

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (const giveUpAt = Date.now() + 20_000; !(await condition());) {
    if (Date.now() > giveUpAt) throw new Error('the condition did not come true in 20 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Secrets and records on the Kubernetes store, with two stores on one real kube-apiserver
 * standing in for two replicas: a swap writes only over the data it read, whichever
 * replica changed or deleted the object since, and a secret's creation time is its
 * Secret's creationTimestamp, kept by later writes. Records that are not secret are
 * ConfigMaps of their own label, and no other ConfigMap is taken for one.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { KubernetesStore } from '../../src/store/kubernetes/store';
import { namespaceOfTeam, entryObjectName } from '../../src/store/kubernetes/names';
import { newId } from '../../src/lib/ids';
import { installCrds, kubeConfigOf, kubernetesStoreOn } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';

jest.setTimeout(120_000);

let cluster: KubeApiServer;
const [S1, S2, S3, S4] = [newId('team'), newId('team'), newId('team'), newId('team')];
const stores: KubernetesStore[] = [];

async function replica(): Promise<KubernetesStore> {
  const store = kubernetesStoreOn(cluster);
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

describe('secrets on the Kubernetes store', () => {
  it('swaps only over the data it read, whichever replica wrote since', async () => {
    const [a, b] = [await replica(), await replica()];
    await a.secrets.put(S1, 'webhook-secret-wh_1', { current: 'x' });
    // Both replicas have read x (B through its watch).
    for (let i = 0; i < 100 && !(await b.secrets.get(S1, 'webhook-secret-wh_1')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await b.secrets.get(S1, 'webhook-secret-wh_1')).toEqual({ current: 'x' });

    expect(await a.secrets.swap(S1, 'webhook-secret-wh_1', { current: 'x' }, { current: 'y' })).toBe(true);
    // B still expects x: its swap must not write over y, whether its cache has seen y or not.
    expect(await b.secrets.swap(S1, 'webhook-secret-wh_1', { current: 'x' }, { current: 'z' })).toBe(false);
    expect(await a.secrets.get(S1, 'webhook-secret-wh_1')).toEqual({ current: 'y' });
    expect(await b.secrets.get(S1, 'webhook-secret-wh_1')).toEqual({ current: 'y' });
    expect(await b.secrets.swap(S1, 'webhook-secret-wh_1', { current: 'y' }, { current: 'z' })).toBe(true);
    expect(await b.secrets.get(S1, 'webhook-secret-wh_1')).toEqual({ current: 'z' });
  });

  it('writes nothing over a Secret deleted behind its back, and forgets it at once', async () => {
    const store = await replica();
    await store.secrets.put(S2, 'webhook-secret-wh_2', { current: 'x' });
    const core = kubeConfigOf(cluster).makeApiClient(CoreV1Api);
    await core.deleteNamespacedSecret({ name: entryObjectName('webhook-secret-wh_2'), namespace: namespaceOfTeam(S2, 'cloudplane-system') });
    expect(await store.secrets.swap(S2, 'webhook-secret-wh_2', { current: 'x' }, { current: 'y' })).toBe(false);
    expect(await store.secrets.get(S2, 'webhook-secret-wh_2')).toBeUndefined();
    await expect(
      core.readNamespacedSecret({ name: entryObjectName('webhook-secret-wh_2'), namespace: namespaceOfTeam(S2, 'cloudplane-system') }),
    ).rejects.toMatchObject({ code: 404 });
  });

  it("gives a secret's creation time from its Secret, kept by later writes", async () => {
    const store = await replica();
    const before = Date.now();
    await store.secrets.put(S3, 'vpn-psk-vpn_3', { value: 'first-key-0123456789' });
    const [first] = await store.secrets.list('vpn-psk-vpn_3');
    // creationTimestamp has whole seconds.
    expect(Date.parse(first.createdAt)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    expect(Date.parse(first.createdAt)).toBeLessThanOrEqual(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await store.secrets.put(S3, 'vpn-psk-vpn_3', { value: 'second-key-0123456789' });
    const [second] = await store.secrets.list('vpn-psk-vpn_3');
    expect(second).toEqual({ team: S3, name: 'vpn-psk-vpn_3', data: { value: 'second-key-0123456789' }, createdAt: first.createdAt });
  });
});

describe('records on the Kubernetes store', () => {
  it('keeps a record as a ConfigMap in its team namespace, shared by replicas, swapped only over what was read', async () => {
    const [a, b] = [await replica(), await replica()];
    const namespace = namespaceOfTeam(S4, 'cloudplane-system');
    const core = kubeConfigOf(cluster).makeApiClient(CoreV1Api);
    // A driver's ConfigMap in the same namespace (an HAProxy configuration) is no record.
    await a.records.put(S4, 'webhook-listener-wh_4', { holder: 'h1', expires_at: '1' });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'lb-haproxy', labels: { 'app.kubernetes.io/managed-by': 'cloudplane' } }, data: { 'haproxy.cfg': 'global' } },
    });

    const [made] = (await core.listNamespacedConfigMap({ namespace, labelSelector: 'cloudplane.dev/store-record=true' })).items;
    expect(made.data).toEqual({ holder: 'h1', expires_at: '1' });
    expect(made.metadata?.annotations?.['cloudplane.dev/record-name']).toBe('webhook-listener-wh_4');
    // Not a secret: nothing of it is a Secret.
    expect(await a.secrets.get(S4, 'webhook-listener-wh_4')).toBeUndefined();

    for (let i = 0; i < 100 && !(await b.records.get(S4, 'webhook-listener-wh_4')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await b.records.get(S4, 'webhook-listener-wh_4')).toEqual({ holder: 'h1', expires_at: '1' });
    expect(await a.records.swap(S4, 'webhook-listener-wh_4', { holder: 'h1', expires_at: '1' }, { holder: 'h2', expires_at: '2' })).toBe(true);
    expect(await b.records.swap(S4, 'webhook-listener-wh_4', { holder: 'h1', expires_at: '1' }, { holder: 'h3', expires_at: '3' })).toBe(false);
    expect(await b.records.get(S4, 'webhook-listener-wh_4')).toEqual({ holder: 'h2', expires_at: '2' });
    // Create-if-absent: the first writer's data wins.
    expect(await b.records.add(S4, 'webhook-listener-wh_4', { holder: 'late', expires_at: '9' })).toEqual({ holder: 'h2', expires_at: '2' });
    expect((await a.records.list('')).filter((r) => r.team === S4).map((r) => r.name)).toEqual(['webhook-listener-wh_4']);

    await b.records.delete(S4, 'webhook-listener-wh_4');
    expect(await b.records.get(S4, 'webhook-listener-wh_4')).toBeUndefined();
    expect((await core.listNamespacedConfigMap({ namespace })).items.map((c) => c.metadata?.name)).toEqual(expect.arrayContaining(['lb-haproxy']));
    expect((await core.listNamespacedConfigMap({ namespace, labelSelector: 'cloudplane.dev/store-record=true' })).items).toEqual([]);
  });
});

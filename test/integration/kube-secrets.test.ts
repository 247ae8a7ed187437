/**
 * Secrets on the Kubernetes store, with two stores on one real kube-apiserver standing in
 * for two replicas: a swap writes only over the data it read, whichever replica changed
 * or deleted the Secret since, and a secret's creation time is its Secret's
 * creationTimestamp, kept by later writes.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { KubernetesStore } from '../../src/store/kubernetes/store';
import { namespaceOfTeam, secretObjectName } from '../../src/store/kubernetes/names';
import { newId } from '../../src/lib/ids';
import { installCrds, kubeConfigOf, kubernetesStoreOn } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';

jest.setTimeout(120_000);

let cluster: KubeApiServer;
const [S1, S2, S3] = [newId('team'), newId('team'), newId('team')];
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
    await a.putSecret(S1, 'webhook-secret-wh_1', { current: 'x' });
    // Both replicas have read x (B through its watch).
    for (let i = 0; i < 100 && !(await b.getSecret(S1, 'webhook-secret-wh_1')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await b.getSecret(S1, 'webhook-secret-wh_1')).toEqual({ current: 'x' });

    expect(await a.swapSecret(S1, 'webhook-secret-wh_1', { current: 'x' }, { current: 'y' })).toBe(true);
    // B still expects x: its swap must not write over y, whether its cache has seen y or not.
    expect(await b.swapSecret(S1, 'webhook-secret-wh_1', { current: 'x' }, { current: 'z' })).toBe(false);
    expect(await a.getSecret(S1, 'webhook-secret-wh_1')).toEqual({ current: 'y' });
    expect(await b.getSecret(S1, 'webhook-secret-wh_1')).toEqual({ current: 'y' });
    expect(await b.swapSecret(S1, 'webhook-secret-wh_1', { current: 'y' }, { current: 'z' })).toBe(true);
    expect(await b.getSecret(S1, 'webhook-secret-wh_1')).toEqual({ current: 'z' });
  });

  it('writes nothing over a Secret deleted behind its back, and forgets it at once', async () => {
    const store = await replica();
    await store.putSecret(S2, 'webhook-secret-wh_2', { current: 'x' });
    const core = kubeConfigOf(cluster).makeApiClient(CoreV1Api);
    await core.deleteNamespacedSecret({ name: secretObjectName('webhook-secret-wh_2'), namespace: namespaceOfTeam(S2, 'cloudplane-system') });
    expect(await store.swapSecret(S2, 'webhook-secret-wh_2', { current: 'x' }, { current: 'y' })).toBe(false);
    expect(await store.getSecret(S2, 'webhook-secret-wh_2')).toBeUndefined();
    await expect(
      core.readNamespacedSecret({ name: secretObjectName('webhook-secret-wh_2'), namespace: namespaceOfTeam(S2, 'cloudplane-system') }),
    ).rejects.toMatchObject({ code: 404 });
  });

  it("gives a secret's creation time from its Secret, kept by later writes", async () => {
    const store = await replica();
    const before = Date.now();
    await store.putSecret(S3, 'vpn-psk-vpn_3', { value: 'first-key-0123456789' });
    const [first] = await store.listSecrets('vpn-psk-vpn_3');
    // creationTimestamp has whole seconds.
    expect(Date.parse(first.createdAt)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    expect(Date.parse(first.createdAt)).toBeLessThanOrEqual(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await store.putSecret(S3, 'vpn-psk-vpn_3', { value: 'second-key-0123456789' });
    const [second] = await store.listSecrets('vpn-psk-vpn_3');
    expect(second).toEqual({ team: S3, name: 'vpn-psk-vpn_3', data: { value: 'second-key-0123456789' }, createdAt: first.createdAt });
  });
});

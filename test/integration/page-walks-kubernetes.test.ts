/**
 * Page walks over the Kubernetes store's ordered indexes, kept on its cache, keep
 * docs/api.md's promise for lists on a real kube-apiserver: random interleavings of
 * creates, deletions and status changes with the pages of a walk
 * (test/helpers/page-walk-property.ts). Few runs: every write is a round trip.
 */
import { KubernetesStore } from '../../src/store/kubernetes/store';
import { installCrds, kubernetesStoreOn } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { checkPageWalks, listedForTest } from '../helpers/page-walk-property';

jest.setTimeout(240_000);

let cluster: KubeApiServer;
let store: KubernetesStore;

beforeAll(async () => {
  cluster = await startKubeApiServer();
  await installCrds(cluster);
  store = kubernetesStoreOn(cluster, { listed: [listedForTest] });
  await store.start();
});

afterAll(async () => {
  await store?.stop();
  await cluster?.stop();
});

it('visits every object that matched for the whole walk exactly once, in order, whatever is written meanwhile', async () => {
  await checkPageWalks({ store: () => store, numRuns: 30, maxActions: 24 });
});

/**
 * Cluster mode for the API suites: with CLOUDPLANE_TEST_STORE=kubernetes, each test
 * service's data directory gets its own real kube-apiserver (and etcd) with the CRDs
 * installed, and the service runs with the Kubernetes store against it. Services started
 * again on the same data directory find the same API server, as a restarted operator would.
 */
import https from 'node:https';
import { ApiextensionsV1Api, KubeConfig } from '@kubernetes/client-node';
import { allCrds } from '../../src/resources/crd';
import { families } from '../../src/resources/registry';
import { createLogger } from '../../src/logger';
import { KubernetesStore, KubernetesStoreOptions } from '../../src/store/kubernetes/store';
import { KubeApiServer, startKubeApiServer } from './kube-apiserver';
import { expectOnlyListedCalls, operatorKubeconfigFromChart } from './chart';

const clusters = new Map<string, Promise<KubeApiServer>>();
const started: KubeApiServer[] = [];

export const clusterMode = () => process.env.CLOUDPLANE_TEST_STORE === 'kubernetes';
/** A Kubernetes store of every family on a test API server, not started; `options` add to or override the defaults. */
export function kubernetesStoreOn(server: KubeApiServer, options: Partial<KubernetesStoreOptions> = {}): KubernetesStore {
  return new KubernetesStore({
    kubeConfig: kubeConfigOf(server),
    kinds: families.map((f) => ({ kind: f.kind, plural: f.plural, idPrefix: f.idPrefix })),
    systemNamespace: 'cloudplane-system',
    logger: createLogger('silent'),
    ...options,
  });
}

/**
 * With CLOUDPLANE_TEST_RBAC=chart as well, the service runs as the chart's ServiceAccount
 * under exactly the chart's RBAC (test/helpers/chart.ts), and stopping the clusters fails
 * the suite if it made a call the chart does not grant (a 403) or one
 * src/store/kubernetes/api-calls.ts does not list.
 */
const chartRbac = () => process.env.CLOUDPLANE_TEST_RBAC === 'chart';
const operatorKubeconfigs = new Map<KubeApiServer, string>();

export function kubeConfigOf(server: KubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  return kc;
}

/**
 * POSTs a CRD as JSON, as kubectl and helm send the YAML. The typed client would pass it
 * through its model, which knows `x-kubernetes-preserve-unknown-fields` only by its
 * camel-case name and drops it from every property schema.
 */
async function createCrd(kc: KubeConfig, crd: object): Promise<void> {
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = new URL('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', kc.getCurrentCluster()!.server);
  const body = JSON.stringify(crd);
  await new Promise<void>((resolve, reject) => {
    const req = https.request(url, { ...options, method: 'POST', headers: { ...options.headers, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`creating a CRD answered ${res.statusCode}: ${text}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Creates the CRDs and waits until the API server serves them. */
export async function installCrds(server: KubeApiServer): Promise<void> {
  const kc = kubeConfigOf(server);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const crd of allCrds()) await createCrd(kc, crd);
  const deadline = Date.now() + 30_000;
  for (const crd of allCrds()) {
    for (;;) {
      const current = await api.readCustomResourceDefinition({ name: crd.metadata.name });
      if (current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not established`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export function clusterFor(dataDir: string): Promise<KubeApiServer> {
  let cluster = clusters.get(dataDir);
  if (!cluster) {
    cluster = startKubeApiServer().then(async (server) => {
      started.push(server);
      await installCrds(server);
      return server;
    });
    clusters.set(dataDir, cluster);
  }
  return cluster;
}

/**
 * The settings that put a service on `server` as its store. The test API server has no
 * controller manager to run batch/v1 Jobs: jobs run on the simulated executor, and
 * test/integration/job-driver.test.ts covers the Job driver itself.
 */
export function storeEnvFor(server: KubeApiServer): Record<string, string> {
  return {
    CLOUDPLANE_STORE: 'kubernetes',
    CLOUDPLANE_KUBECONFIG: server.kubeconfigPath,
    CLOUDPLANE_SYSTEM_NAMESPACE: 'cloudplane-system',
    CLOUDPLANE_PROVIDER: 'simulated',
  };
}

/** The environment that points a service at its data directory's API server. */
export async function clusterEnv(dataDir: string): Promise<Record<string, string>> {
  const server = await clusterFor(dataDir);
  if (chartRbac() && !operatorKubeconfigs.has(server)) operatorKubeconfigs.set(server, operatorKubeconfigFromChart(server, server.workDir));
  return {
    // Every write here is a round trip to the API server and back through a watch, several
    // times slower than the embedded store's, and two of these clusters share two cores: a
    // transient state (stopping, deleting) must outlast the next request as it does there.
    CLOUDPLANE_SIM_DELAY_MS: '200',
    ...storeEnvFor(server),
    ...(chartRbac() ? { CLOUDPLANE_KUBECONFIG: operatorKubeconfigs.get(server)! } : {}),
  };
}

export async function stopClusters(): Promise<void> {
  const servers = started.splice(0);
  const differences: unknown[] = [];
  for (const server of servers) {
    if (!operatorKubeconfigs.has(server)) continue;
    try {
      expectOnlyListedCalls(server);
    } catch (err) {
      differences.push(err);
    }
    operatorKubeconfigs.delete(server);
  }
  await Promise.all(servers.map((s) => s.stop()));
  clusters.clear();
  if (differences.length > 0) throw differences[0];
}

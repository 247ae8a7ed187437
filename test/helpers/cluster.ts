/**
 * Cluster mode for the API suites: with CLOUDPLANE_TEST_STORE=kubernetes, each test
 * service's data directory gets its own real kube-apiserver (and etcd) with the CRDs
 * installed, and the service runs with the Kubernetes store against it. Services started
 * again on the same data directory find the same API server, as a restarted operator would.
 */
import path from 'node:path';
import { ApiextensionsV1Api, KubeConfig } from '@kubernetes/client-node';
import { allCrds } from '../../src/resources/crd';
import { families } from '../../src/resources/registry';
import { createLogger } from '../../src/logger';
import { KubernetesStore, KubernetesStoreOptions } from '../../src/store/kubernetes/store';
import { KubeApiServer, kubectlOn, startKubeApiServer } from './kube-apiserver';
import { expectOnlyListedCalls, operatorEnvFromChart } from './chart';
import { packageRoot } from '../../src/lib/package-root';

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
const operatorEnvs = new Map<KubeApiServer, Record<string, string>>();

export function kubeConfigOf(server: KubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  return kc;
}

/** The CRD files users and the chart install (`make crds`). */
export const CRD_FILES_DIR = path.join(packageRoot(__dirname), 'crds');

/**
 * Installs the CRDs as users do, `kubectl apply -f crds/` with the real kubectl (which
 * reads them as YAML 1.1), and waits until the API server serves them: every cluster test
 * runs against what users apply, not against the generator's in-memory JSON.
 */
export async function installCrds(server: KubeApiServer): Promise<void> {
  await kubectlOn(server.kubeconfigPath)(['apply', '-f', CRD_FILES_DIR]);
  const api = kubeConfigOf(server).makeApiClient(ApiextensionsV1Api);
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
  if (chartRbac() && !operatorEnvs.has(server)) operatorEnvs.set(server, operatorEnvFromChart(server, server.workDir));
  return {
    // Every write here is a round trip to the API server and back through a watch, several
    // times slower than the embedded store's, and three of these clusters (jest.config.js's
    // workers) share two cores: a transient state (stopping, deleting) must outlast the
    // next request as it does there.
    CLOUDPLANE_SIM_DELAY_MS: '200',
    ...storeEnvFor(server),
    ...(chartRbac() ? operatorEnvs.get(server)! : {}),
  };
}

export async function stopClusters(): Promise<void> {
  const servers = started.splice(0);
  const differences: unknown[] = [];
  for (const server of servers) {
    if (!operatorEnvs.has(server)) continue;
    try {
      expectOnlyListedCalls(server);
    } catch (err) {
      differences.push(err);
    }
    operatorEnvs.delete(server);
  }
  await Promise.all(servers.map((s) => s.stop()));
  clusters.clear();
  if (differences.length > 0) throw differences[0];
}

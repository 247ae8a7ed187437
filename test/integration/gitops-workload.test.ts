/**
 * Backends by reference and connection Secrets with the Kubernetes drivers, as a platform
 * team would try them: a Server and a LoadBalancer applied from one YAML file with kubectl
 * onto a control plane that runs workloads (kube-apiserver, kube-controller-manager with
 * its garbage collector, kube-scheduler, KWOK), the operator running under the chart's
 * RBAC. The load balancer's HAProxy configuration gets the server Pod's address through
 * `serverRef`, a workload reads the load balancer's address from the connection Secret,
 * and a kubectl delete removes the Secret and then the custom resource.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { CONFIG_KEY } from '../../src/drivers/kubernetes/haproxy-manifests';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { kubectlOn, secretDataOf } from '../helpers/kube-apiserver';
import { eventually, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';

jest.setTimeout(240_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';
const SETTLE_MS = 90_000;

let cluster: WorkloadCluster;
let addon: LoadBalancerAddon;
let t: TestService;
let core: CoreV1Api;
let namespace: string;

const kubectl = (args: string[], input?: string) => kubectlOn(cluster.kubeconfigPath)(args, input);
const idOf = async (plural: string, name: string) =>
  eventually(
    async () => {
      const object = JSON.parse(await kubectl(['get', `${plural}.cloudplane.dev`, name, '-n', namespace, '-o', 'json']));
      return object.status?.status ? (object.metadata.labels['cloudplane.dev/id'] as string) : null;
    },
    SETTLE_MS,
    200,
  );
const secretData = (name: string) => secretDataOf(core, namespace, name);

beforeAll(async () => {
  cluster = await startWorkloadCluster({ crds: true });
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  addon = await startLoadBalancerAddon(cluster.kubeConfig);
  t = await startServiceUnderChartRbac(cluster, {
    CLOUDPLANE_DELETED_RETENTION_SECONDS: '1',
  });
  namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  await kubectl(['create', 'namespace', namespace]).catch((err: Error) => {
    if (!/AlreadyExists/.test(err.message)) throw err;
  });
}, 240_000);

afterAll(async () => {
  await t?.stop();
  await addon?.stop();
  await cluster?.stop();
});

test('a load balancer and its server from one YAML file: HAProxy gets the server by serverRef, the address is in the connection Secret, which goes with the resource', async () => {
  await kubectl(
    ['apply', '-n', namespace, '-f', '-'],
    `
apiVersion: cloudplane.dev/v1alpha1
kind: LoadBalancer
metadata:
  name: shop
spec:
  name: shop
  region: fra1
  protocol: tcp
  port: 443
  backends:
    - serverRef: { name: shop-app }
      port: 8443
  writeConnectionSecretToRef: { name: shop-endpoint }
---
apiVersion: cloudplane.dev/v1alpha1
kind: Server
metadata:
  name: shop-app
spec:
  name: shop-app
  region: fra1
  plan: s-1vcpu-1gb
`,
  );
  const serverId = await idOf('servers', 'shop-app');
  const server = await waitForStatus(t, `/api/v1/servers/${serverId}`, 'running', SETTLE_MS);
  const lbId = await idOf('loadbalancers', 'shop');
  const lb = await waitForStatus(t, `/api/v1/load-balancers/${lbId}`, 'running', SETTLE_MS);

  // The reference reached the data plane: HAProxy's configuration has the server Pod's address.
  await eventually(
    async () => {
      const configMap = await core.readNamespacedConfigMap({ name: objectName(lbId), namespace });
      return configMap.data?.[CONFIG_KEY].includes(`${server.ipv4}:8443`);
    },
    SETTLE_MS,
    200,
  );
  // The record shows what the reconciler resolved, once its pass has written the status.
  const record = await eventually(
    async () => {
      const current = (await t.api('GET', `/api/v1/load-balancers/${lbId}`)).body.data;
      return current.backends[0]?.server_id ? current : null;
    },
    SETTLE_MS,
    200,
  );
  expect(record.backends).toEqual([expect.objectContaining({ server_id: serverId, server_ref: { name: 'shop-app' }, port: 8443 })]);

  // What another workload reads: the address the LoadBalancer Service was given.
  const service = await core.readNamespacedService({ name: objectName(lbId), namespace });
  const ingress = service.status?.loadBalancer?.ingress?.[0]?.ip;
  expect(lb.ipv4).toBe(ingress);
  const details = await eventually(() => secretData('shop-endpoint'), SETTLE_MS, 200);
  expect(details).toEqual({ address: ingress, port: '443', protocol: 'tcp', url: `tcp://${ingress}:443` });

  // Deleted from Git: the Secret goes as the deletion begins, and the custom resource after it (retention 1 s).
  await kubectl(['delete', 'loadbalancers.cloudplane.dev', 'shop', '-n', namespace, '--wait=false']);
  await eventually(async () => (await secretData('shop-endpoint')) === undefined, SETTLE_MS, 200);
  await eventually(async () => !(await kubectl(['get', 'loadbalancers.cloudplane.dev', '-n', namespace, '-o', 'name'])).includes('shop'), SETTLE_MS, 200);
});

/**
 * Issue 13 tried as a platform team would, in one run on a control plane that runs
 * workloads (kube-apiserver, controller-manager, scheduler, KWOK), the operator under
 * exactly the chart's RBAC with the chart's default event bus (the embedded one, on a data
 * directory that outlives the process as the chart's claim does):
 * a second team and a viewer made through the API, the viewer refused a write; a load
 * balancer applied from Git with `serverRef`, its address read from its connection Secret;
 * the load balancer paused (a change from Git waits) and resumed; the operator restarted, the audit history whole.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { namespaceOfTeam, objectName } from '../../src/store/kubernetes/names';
import { LoadBalancerAddon, startLoadBalancerAddon } from '../helpers/load-balancer-addon';
import { kubectlOn, secretDataOf } from '../helpers/kube-apiserver';
import { eventually, request, tempDataDir, TestService, waitForStatus, startServiceUnderChartRbac } from '../helpers/service';
import { startWorkloadCluster, WorkloadCluster } from '../helpers/workload-cluster';
import { NAMESPACE } from '../helpers/chart';
import { pageAll } from '../helpers/paging';

jest.setTimeout(300_000);

const SETTLE_MS = 90_000;

let cluster: WorkloadCluster;
let addon: LoadBalancerAddon;
let operator: TestService;
let core: CoreV1Api;
const dataDir = tempDataDir();

const kubectl = (args: string[], input?: string) => kubectlOn(cluster.kubeconfigPath)(args, input);

beforeAll(async () => {
  cluster = await startWorkloadCluster({ crds: true });
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  addon = await startLoadBalancerAddon(cluster.kubeConfig);
  operator = await startServiceUnderChartRbac(cluster, {}, dataDir);
}, 240_000);

afterAll(async () => {
  await operator?.stop();
  await addon?.stop();
  await cluster?.stop();
});

test('second team and viewer, a load balancer from Git by serverRef with its connection Secret, paused, and the audit history through a restart', async () => {
  // A second team, its owner's first key, and a viewer invited by e-mail with a key of its own.
  const team = await operator.api('POST', '/api/v1/teams', { name: 'Payments', owner_email: 'lead@payments.example' });
  expect(team.status).toBe(201);
  const ownerKey: string = team.body.data.api_key.key;
  const asOwner = (method: string, path: string, body?: unknown) => request(operator.url, method, path, body, { key: ownerKey });
  const viewer = await asOwner('POST', '/api/v1/settings/team/members', { email: 'auditor@payments.example', role: 'viewer' });
  expect(viewer.status).toBe(201);
  const viewerKey: string = (await asOwner('POST', '/api/v1/settings/api-keys', { name: 'auditor', user_id: viewer.body.data.id })).body.data.key;
  const refused = await request(operator.url, 'POST', '/api/v1/servers', { name: 'nope', region: 'fra1' }, { key: viewerKey });
  expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: 'forbidden' });

  // From Git, into the team's namespace: the load balancer names its server, not an API id.
  const namespace = namespaceOfTeam(team.body.data.id, NAMESPACE);
  const manifest = (port: number) => `
apiVersion: cloudplane.dev/v1alpha1
kind: LoadBalancer
metadata:
  name: checkout
spec:
  name: checkout
  region: fra1
  protocol: tcp
  port: ${port}
  backends:
    - serverRef: { name: checkout-app }
      port: 8443
  writeConnectionSecretToRef: { name: checkout-endpoint }
---
apiVersion: cloudplane.dev/v1alpha1
kind: Server
metadata:
  name: checkout-app
spec:
  name: checkout-app
  region: fra1
`;
  await kubectl(['apply', '-n', namespace, '-f', '-'], manifest(443));
  const idOf = (plural: string, name: string) =>
    eventually(
      async () => {
        const object = JSON.parse(await kubectl(['get', `${plural}.cloudplane.dev`, name, '-n', namespace, '-o', 'json']));
        return object.status?.status ? (object.metadata.labels['cloudplane.dev/id'] as string) : null;
      },
      SETTLE_MS,
      200,
    );
  const serverId = await idOf('servers', 'checkout-app');
  const lbId = await idOf('loadbalancers', 'checkout');
  const lb = await waitForStatus({ api: asOwner }, `/api/v1/load-balancers/${lbId}`, 'running', SETTLE_MS);
  await waitForStatus({ api: asOwner }, `/api/v1/servers/${serverId}`, 'running', SETTLE_MS);
  const endpoint = await eventually(() => secretDataOf(core, namespace, 'checkout-endpoint'), SETTLE_MS, 200);
  expect(endpoint).toMatchObject({ address: lb.ipv4, port: '443' });
  // The viewer reads what the reconciler resolved, once its pass has written it.
  const resolved = await eventually(
    async () => {
      const record = (await request(operator.url, 'GET', `/api/v1/load-balancers/${lbId}`, undefined, { key: viewerKey })).body.data;
      return record.backends[0]?.server_id ? record : null;
    },
    SETTLE_MS,
    200,
  );
  expect(resolved.backends[0]).toMatchObject({ server_id: serverId, server_ref: { name: 'checkout-app' } });

  // Paused: a change from Git waits, the load balancer's Service and the Secret untouched, until resumed.
  const servicePorts = async () => ((await core.readNamespacedService({ name: objectName(lbId), namespace })).spec?.ports ?? []).map((p) => p.port);
  expect(await servicePorts()).toEqual([443]);
  await kubectl(['annotate', 'loadbalancers.cloudplane.dev', 'checkout', '-n', namespace, 'cloudplane.dev/paused=true']);
  await kubectl(['apply', '-n', namespace, '-f', '-'], manifest(8080));
  const generationOf = async () => JSON.parse(await kubectl(['get', 'loadbalancers.cloudplane.dev', 'checkout', '-n', namespace, '-o', 'json']));
  await eventually(async () => (await generationOf()).metadata.generation > (await generationOf()).status.observedGeneration, SETTLE_MS, 200);
  // Long enough for an unpaused pass to have applied it several times over.
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const paused = await generationOf();
  expect(paused.status.observedGeneration).toBeLessThan(paused.metadata.generation);
  expect(await servicePorts()).toEqual([443]);
  expect((await secretDataOf(core, namespace, 'checkout-endpoint'))?.port).toBe('443');
  await kubectl(['annotate', 'loadbalancers.cloudplane.dev', 'checkout', '-n', namespace, 'cloudplane.dev/paused-']);
  await eventually(async () => (await secretDataOf(core, namespace, 'checkout-endpoint'))?.port === '8080', SETTLE_MS, 200);
  await eventually(async () => (await servicePorts()).includes(8080), SETTLE_MS, 200);

  // The pod restarts (here: the operator process, on the same data directory): the audit history is whole.
  const auditOf = async () => (await pageAll<{ id: string; type: string }>(asOwner, '/api/v1/audit-log?order=asc')).map((event) => `${event.id} ${event.type}`);
  const before = await auditOf();
  expect(before.some((line) => line.endsWith('load_balancer.running'))).toBe(true);
  expect(before.some((line) => line.endsWith('load_balancer.updated'))).toBe(true);
  await operator.stop();
  operator = await startServiceUnderChartRbac(cluster, { CLOUDPLANE_BOOTSTRAP_API_KEY: operator.key }, dataDir);
  const after = await auditOf();
  expect(after.slice(0, before.length)).toEqual(before);
});

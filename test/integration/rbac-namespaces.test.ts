/**
 * Least privilege across namespaces, asked of a real API server: with the chart's RBAC
 * installed as users install it, the operator (as the chart's ServiceAccount) holds its
 * rights on Secrets, Pods, Deployments and Jobs in the namespaces it made for teams (by the
 * RoleBinding it makes in each), and none in any other namespace, nor across namespaces.
 * `kubectl auth can-i --as` is the API server's own answer (a SubjectAccessReview).
 *
 * Also: a namespace it made before it bound itself (an upgrade) gets its RoleBinding when
 * the operator starts, and the per-namespace watches start with a namespace and stop when
 * it goes.
 */
import { execFileSync } from 'node:child_process';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import pino from 'pino';
import { namespaceOfTeam } from '../../src/store/kubernetes/names';
import { NamespacedWatches } from '../../src/store/kubernetes/namespaced-watches';
import { TeamNamespaces } from '../../src/store/kubernetes/team-namespaces';
import { expectOnlyListedCalls, NAMESPACE, operatorCalls, render } from '../helpers/chart';
import { installCrds, kubeConfigOf, kubernetesStoreOn } from '../helpers/cluster';
import { KubeApiServer, kubectlBinary, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, startServiceUnderChartRbac, TestService } from '../helpers/service';
import { parseAllDocuments } from 'yaml';

jest.setTimeout(180_000);

/** Made by the operator before it bound itself in its namespaces: labelled as its own, without a RoleBinding. */
const MADE_BEFORE_UPGRADE = 'team-0upgraded0before0rbac';
const SOMEONE_ELSES = 'made-by-someone-else';

const chart = parseAllDocuments(render())
  .map((d) => d.toJS())
  .filter(Boolean);
const account = chart.find((o) => o.kind === 'ServiceAccount').metadata.name as string;
const teamRole = chart.find((o) => o.kind === 'ClusterRole' && o.metadata.name.endsWith('-team-namespace')).metadata.name as string;
const OPERATOR = `system:serviceaccount:${NAMESPACE}:${account}`;

describe("the operator's rights reach only the namespaces it made for teams", () => {
  let cluster: KubeApiServer;
  let t: TestService;
  let teamNamespace: string;

  const kubectl = (...args: string[]) =>
    execFileSync(kubectlBinary(), ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  /** `kubectl auth can-i` as the operator's ServiceAccount. */
  const can = (...args: string[]) => {
    try {
      return kubectl('auth', 'can-i', `--as=${OPERATOR}`, ...args);
    } catch (err) {
      // can-i exits 1 for "no".
      return String((err as { stdout?: string }).stdout ?? '').trim();
    }
  };

  beforeAll(async () => {
    cluster = await startKubeApiServer();
    await installCrds(cluster);
    kubectl('create', 'namespace', SOMEONE_ELSES);
    kubectl('create', 'namespace', MADE_BEFORE_UPGRADE);
    kubectl('label', 'namespace', MADE_BEFORE_UPGRADE, 'app.kubernetes.io/managed-by=cloudplane');
    // Installs the chart's ServiceAccount and RBAC with kubectl apply, as `helm install` would.
    t = await startServiceUnderChartRbac(cluster, { CLOUDPLANE_PROVIDER: 'simulated' });
    // A team made through the API: the operator makes its namespace on the first write.
    const created = await t.api('POST', '/api/v1/teams', { name: 'Platform', owner_email: 'lead@platform.example' });
    expect(created.status).toBe(201);
    teamNamespace = namespaceOfTeam(created.body.data.id, NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await cluster?.stop();
  });

  const WORK = [
    ['get', 'secrets'],
    ['create', 'secrets'],
    ['get', 'pods'],
    ['create', 'pods'],
    ['get', 'deployments.apps'],
    ['create', 'deployments.apps'],
    ['get', 'jobs.batch'],
    ['create', 'jobs.batch'],
  ];

  it("made the team's namespace and bound itself there, to the team-namespace ClusterRole", async () => {
    const binding = await kubeConfigOf(cluster).makeApiClient(RbacAuthorizationV1Api).readNamespacedRoleBinding({ name: teamRole, namespace: teamNamespace });
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: teamRole });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account, namespace: NAMESPACE }]);
  });

  it("may get and create Secrets, Pods, Deployments and Jobs in the team's namespace", () => {
    for (const [verb, resource] of WORK) expect([verb, resource, can(verb, resource, '-n', teamNamespace)]).toEqual([verb, resource, 'yes']);
  });

  it('may do none of it in a namespace it did not make', () => {
    for (const namespace of ['default', 'kube-system', SOMEONE_ELSES]) {
      for (const [verb, resource] of WORK) expect([namespace, verb, resource, can(verb, resource, '-n', namespace)]).toEqual([namespace, verb, resource, 'no']);
      for (const verb of ['list', 'watch', 'update', 'delete'])
        expect([namespace, verb, can(verb, 'secrets', '-n', namespace)]).toEqual([namespace, verb, 'no']);
    }
  });

  it('may not list or watch Secrets, Pods or what it makes across namespaces', () => {
    for (const resource of ['secrets', 'pods', 'deployments.apps', 'services', 'configmaps', 'persistentvolumeclaims', 'jobs.batch']) {
      for (const verb of ['list', 'watch']) expect([verb, resource, can(verb, resource, '--all-namespaces')]).toEqual([verb, resource, 'no']);
    }
  });

  it('may bind no role but the team-namespace ClusterRole', () => {
    expect(can('bind', `clusterroles.rbac.authorization.k8s.io/${teamRole}`)).toBe('yes');
    for (const role of ['cluster-admin', 'admin', 'edit', 'view'])
      expect([role, can('bind', `clusterroles.rbac.authorization.k8s.io/${role}`)]).toEqual([role, 'no']);
  });

  it('bound itself, when it started, in a namespace it had made before binding itself (an upgrade)', () => {
    for (const [verb, resource] of WORK) expect([verb, resource, can(verb, resource, '-n', MADE_BEFORE_UPGRADE)]).toEqual([verb, resource, 'yes']);
  });

  it('watches namespace by namespace, never across them, and every call it made is listed and allowed', () => {
    const calls = expectOnlyListedCalls(cluster);
    const watches = calls.filter((c) => c.verb === 'watch' && c.group !== 'cloudplane.dev' && c.resource !== 'namespaces');
    expect(watches.length).toBeGreaterThan(0);
    expect(watches.filter((c) => !c.namespace)).toEqual([]);
    expect(new Set(watches.map((c) => c.namespace))).toEqual(new Set([NAMESPACE, teamNamespace, MADE_BEFORE_UPGRADE, namespaceOfTeam(t.teamId, NAMESPACE)]));
    expect(operatorCalls(cluster).filter((c) => c.namespace === SOMEONE_ELSES)).toEqual([]);
  });
});

describe('the watches of a team namespace', () => {
  let cluster: KubeApiServer;
  let watches: NamespacedWatches;

  beforeAll(async () => {
    cluster = await startKubeApiServer();
    await installCrds(cluster);
  });
  afterAll(async () => cluster?.stop());

  it('start when the namespace is made, one per collection however many follow it, and stop when it goes', async () => {
    const kubeConfig = kubeConfigOf(cluster);
    const logger = pino({ level: 'silent' });
    watches = new NamespacedWatches(new TeamNamespaces({ kubeConfig, systemNamespace: 'cloudplane-system', logger }), { kubeConfig, logger });
    const store = kubernetesStoreOn(cluster, { watches });
    await store.start();
    try {
      const follow = { replace: () => undefined, upsert: () => undefined, remove: () => undefined };
      // The store follows secrets and its records; two drivers' followers of pods and one more of secrets add one watch a namespace.
      const followers = [watches.follow('secrets', follow), watches.follow('pods', follow), watches.follow('pods', follow)];
      expect(watches.count()).toBe(3);
      await store.secrets.put('team_0watched0namespace0', 'greeting', { hello: 'world' });
      expect(watches.namespaces.has('team-0watched0namespace0')).toBe(true);
      expect(watches.count()).toBe(6);
      await kubeConfig.makeApiClient(CoreV1Api).deleteNamespace({ name: 'team-0watched0namespace0' });
      // No namespace controller here: it stays Terminating, which is gone enough.
      await eventually(async () => watches.count() === 3, 10_000);
      expect(watches.namespaces.has('team-0watched0namespace0')).toBe(false);
      expect(await store.secrets.get('team_0watched0namespace0', 'greeting')).toBeUndefined();
      for (const f of followers) f.stop();
      expect(watches.count()).toBe(2);
    } finally {
      await store.stop();
    }
  });
});

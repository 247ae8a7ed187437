/**
 * The chart's RBAC against the list of calls the code makes (src/store/kubernetes/api-calls.ts):
 * rendered with the real `helm template`, every rule must be a listed call and every
 * listed call must have its rule, in the right place (a ClusterRole for what goes across
 * namespaces or into teams' namespaces, a Role in the release namespace for what stays
 * there). The list itself is held to the code: each entry is named by a call site, each
 * call site names an entry, and the cluster-mode tests check the API server's audit log
 * against it (test/helpers/chart.ts).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ApiCall, kubernetesApiCalls } from '../../src/store/kubernetes/api-calls';
import { customResourcePlurals } from '../../src/resources/crd';
import { CHART, findOrBuildHelm, NAMESPACE, operatorKubeconfigFromChart, render } from '../helpers/chart';
import { KubeApiServer, kubectlBinary, startKubeApiServer } from '../helpers/kube-apiserver';
import { installCrds } from '../helpers/cluster';

const SRC = path.resolve(__dirname, '../../src');

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** `group|resource|verb` of every grant of the rules. */
function grantsOf(rules: Rule[]): Set<string> {
  const out = new Set<string>();
  for (const rule of rules)
    for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) out.add(`${group}|${resource}|${verb}`);
  return out;
}

function grantsListed(calls: ApiCall[]): Set<string> {
  const out = new Set<string>();
  for (const call of calls) for (const resource of call.resources) for (const verb of call.verbs) out.add(`${call.group}|${resource}|${verb}`);
  return out;
}

/** What the chart grants and the list lacks (unused), and what the list needs and the chart lacks (missing). */
function compare(granted: Set<string>, listed: Set<string>) {
  return { unused: [...granted].filter((g) => !listed.has(g)).sort(), missing: [...listed].filter((g) => !granted.has(g)).sort() };
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

const { helm, why } = findOrBuildHelm();
if (!helm) throw new Error(`helm is needed to render the chart: ${why}`);

describe("the chart's RBAC is the list of calls the code makes, no more and no less", () => {
  const objects = parseAllDocuments(render())
    .map((d) => d.toJS())
    .filter(Boolean);
  const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const calls = kubernetesApiCalls(customResourcePlurals());
  const account = ofKind('ServiceAccount')[0];
  const subjects = [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: NAMESPACE }];
  const teamRole = ofKind('ClusterRole').find((r) => r.metadata.name.endsWith('-team-namespace'));
  const clusterRole = ofKind('ClusterRole').find((r) => r !== teamRole);
  const role = ofKind('Role');

  it("has the operator's ClusterRole bound cluster-wide, the team-namespace one bound in the release namespace only, and a Role", () => {
    expect(ofKind('ClusterRole')).toHaveLength(2);
    expect(teamRole).toBeDefined();
    expect(role).toHaveLength(1);
    expect(role[0].metadata.namespace).toBe(NAMESPACE);
    const bindings = ofKind('ClusterRoleBinding');
    expect(bindings).toHaveLength(1);
    expect(bindings[0].roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole.metadata.name });
    expect(bindings[0].subjects).toEqual(subjects);
    const roleBindings = ofKind('RoleBinding');
    expect(roleBindings.map((b) => ({ namespace: b.metadata.namespace, ...b.roleRef }))).toEqual(
      expect.arrayContaining([
        { namespace: NAMESPACE, apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role[0].metadata.name },
        { namespace: NAMESPACE, apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: teamRole.metadata.name },
      ]),
    );
    expect(roleBindings).toHaveLength(2);
    for (const binding of roleBindings) expect(binding.subjects).toEqual(subjects);
  });

  it('tells the operator which ClusterRole to bind in a team namespace, and to whom', () => {
    const env = ofKind('Deployment')[0].spec.template.spec.containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
    expect(env.find((e) => e.name === 'CLOUDPLANE_TEAM_NAMESPACE_ROLE')?.value).toBe(teamRole.metadata.name);
    expect(env.find((e) => e.name === 'CLOUDPLANE_SERVICE_ACCOUNT_NAME')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'spec.serviceAccountName' } });
  });

  it('uses no wildcard or non-resource URL, and names a resource only to bind the team-namespace ClusterRole', () => {
    for (const rule of [...clusterRole.rules, ...teamRole.rules, ...role[0].rules] as Rule[]) {
      for (const field of [rule.apiGroups, rule.resources, rule.verbs]) expect(field).not.toContain('*');
      expect(rule.nonResourceURLs).toBeUndefined();
      if (rule.verbs.includes('bind'))
        expect(rule).toEqual({
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['clusterroles'],
          resourceNames: [teamRole.metadata.name],
          verbs: ['bind'],
        });
      else expect(rule.resourceNames).toBeUndefined();
    }
    expect(calls.filter((c) => c.teamNamespaceRoleOnly).map((c) => `${c.group}|${c.resources.join(',')}|${c.verbs.join(',')}`)).toEqual([
      'rbac.authorization.k8s.io|clusterroles|bind',
    ]);
  });

  it("grants in the operator's ClusterRole exactly the calls that are cluster-wide: its own kinds, namespaces, its RoleBindings", () => {
    const listed = grantsListed(calls.filter((c) => c.scope === 'cluster'));
    expect(compare(grantsOf(clusterRole.rules), listed)).toEqual({ unused: [], missing: [] });
  });

  it("grants cluster-wide nothing on anyone's Secrets, Pods, workloads or claims, and no write of its own kinds", () => {
    const granted = [...grantsOf(clusterRole.rules)];
    for (const resource of ['secrets', 'pods', 'pods/log', 'configmaps', 'services', 'persistentvolumeclaims', 'events'])
      expect(granted.filter((g) => g.startsWith(`|${resource}|`))).toEqual([]);
    expect(granted.filter((g) => /^(apps|batch|coordination\.k8s\.io)\|/.test(g))).toEqual([]);
    expect(granted.filter((g) => g.startsWith('cloudplane.dev|')).map((g) => g.split('|')[2])).toEqual(
      expect.not.arrayContaining(['get', 'create', 'update', 'delete']),
    );
  });

  it("grants in the team-namespace ClusterRole exactly the calls into a team's namespace", () => {
    const listed = grantsListed(calls.filter((c) => c.scope === 'team-namespaces'));
    expect(compare(grantsOf(teamRole.rules), listed)).toEqual({ unused: [], missing: [] });
  });

  it('grants in its Role, in the release namespace, exactly the calls that stay there: the leader-election Lease', () => {
    const listed = grantsListed(calls.filter((c) => c.scope === 'system-namespace'));
    expect(compare(grantsOf(role[0].rules), listed)).toEqual({ unused: [], missing: [] });
    expect([...grantsOf(clusterRole.rules), ...grantsOf(teamRole.rules)].filter((g) => g.startsWith('coordination.k8s.io|'))).toEqual([]);
  });

  it('can create namespaces and see those it made, and nothing more: none can be changed or deleted', () => {
    const onNamespaces = [...grantsOf(clusterRole.rules)].filter((g) => g.startsWith('|namespaces|')).sort();
    expect(onNamespaces).toEqual(['|namespaces|create', '|namespaces|list', '|namespaces|watch']);
    expect([...grantsOf(teamRole.rules)].filter((g) => g.startsWith('|namespaces|'))).toEqual([]);
  });

  it('knows the custom resources the chart installs as the ones the store keeps', () => {
    const installed = fs
      .readdirSync(path.join(CHART, 'crds'))
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => f.replace(/\.cloudplane\.dev\.yaml$/, ''))
      .sort();
    expect(customResourcePlurals()).toEqual(installed);
  });

  it('lists each call where the code makes it: every entry named at a call site, every call site naming an entry', () => {
    const entries = new Set(calls.map((c) => c.entry));
    expect(entries.size).toBe(calls.length);
    const named = new Map<string, string[]>();
    const files = sourceFiles(SRC).filter((f) => !f.endsWith(path.join('store', 'kubernetes', 'api-calls.ts')));
    for (const file of files) {
      for (const match of fs.readFileSync(file, 'utf8').matchAll(/^\s*(?:\/\/|\*)\s*API call: ([^\n(]+?)\s*(?:\(|$)/gm)) {
        named.set(match[1], [...(named.get(match[1]) ?? []), path.relative(SRC, file)]);
      }
    }
    expect([...named.keys()].filter((n) => !entries.has(n))).toEqual([]);
    expect([...entries].filter((e) => !named.has(e))).toEqual([]);
    // Every client of the API server is in a file that names its calls.
    const clients = files.filter((f) => /makeApiClient|new Watch\(|KubernetesObjectApi\.makeApiClient/.test(fs.readFileSync(f, 'utf8')));
    const naming = new Set([...named.values()].flat());
    const withoutNames = clients.map((f) => path.relative(SRC, f)).filter((f) => !naming.has(f));
    // service.ts only hands the leader elector its client; the Kubernetes cluster drivers'
    // clients (kubernetes-cluster-inside.ts) talk to the control planes they run, not to the
    // cluster the chart grants rights in.
    expect(withoutNames).toEqual(['drivers/kubernetes-cluster-inside.ts', 'service.ts']);
  });
});

describe("on a real kube-apiserver, the chart's ServiceAccount", () => {
  let server: KubeApiServer;
  let operatorKubeconfig: string;

  beforeAll(async () => {
    server = await startKubeApiServer();
    await installCrds(server);
    operatorKubeconfig = operatorKubeconfigFromChart(server, server.workDir);
  }, 120_000);

  afterAll(async () => server?.stop());

  /** `kubectl auth can-i` as the operator: the API server's own answer (SelfSubjectAccessReview). */
  const can = (...args: string[]) => {
    try {
      return execFileSync(kubectlBinary(), ['--kubeconfig', operatorKubeconfig, 'auth', 'can-i', ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
    } catch (err) {
      // can-i exits 1 for "no".
      return String((err as { stdout?: string }).stdout ?? '').trim();
    }
  };

  it('may create a namespace and list those there are, and never delete, change or get one', () => {
    expect(can('create', 'namespaces')).toBe('yes');
    expect(can('list', 'namespaces')).toBe('yes');
    for (const verb of ['delete', 'update', 'patch', 'get']) expect([verb, can(verb, 'namespaces/kube-system')]).toEqual([verb, 'no']);
  });

  it("may take and renew its Lease in its own namespace only, never in kube-system or a team's", () => {
    for (const verb of ['get', 'create', 'update']) expect([verb, can(verb, 'leases.coordination.k8s.io', '-n', NAMESPACE)]).toEqual([verb, 'yes']);
    for (const namespace of ['kube-system', 'team-x7k2abcdefghijklmn']) {
      for (const verb of ['get', 'create', 'update', 'delete'])
        expect([namespace, verb, can(verb, 'leases.coordination.k8s.io', '-n', namespace)]).toEqual([namespace, verb, 'no']);
    }
    expect(can('delete', 'leases.coordination.k8s.io', '-n', NAMESPACE)).toBe('no');
  });

  it('holds no verb its code does not use on what it manages, even in its own namespace', () => {
    // The chart binds the team-namespace rights in the release namespace: the store keeps its own records there.
    expect(can('update', 'servers.cloudplane.dev', '-n', NAMESPACE)).toBe('yes');
    expect(can('patch', 'servers.cloudplane.dev', '-n', NAMESPACE)).toBe('no');
    // ConfigMaps: the drivers' are applied (patch), the store's records replaced (update); none deleted in bulk.
    expect(can('update', 'configmaps', '-n', NAMESPACE)).toBe('yes');
    expect(can('deletecollection', 'configmaps', '-n', NAMESPACE)).toBe('no');
    // Jobs are listed (a CronJob's, by label) but never watched; CronJobs are replaced, never patched.
    expect(can('watch', 'jobs.batch', '-n', NAMESPACE)).toBe('no');
    expect(can('update', 'cronjobs.batch', '-n', NAMESPACE)).toBe('yes');
    expect(can('patch', 'cronjobs.batch', '-n', NAMESPACE)).toBe('no');
    // Events are created, and a correlated one's count raised; never read back or deleted.
    expect(can('patch', 'events', '-n', NAMESPACE)).toBe('yes');
    expect(can('delete', 'events', '-n', NAMESPACE)).toBe('no');
    expect(can('patch', 'servers.cloudplane.dev', '--subresource', 'status', '-n', NAMESPACE)).toBe('no');
  });

  it('holds nothing in a team namespace it has not bound itself in, and may bind only the team-namespace ClusterRole', () => {
    for (const verb of ['get', 'create', 'update']) expect([verb, can(verb, 'servers.cloudplane.dev', '-n', 'team-x7k2abcdefghijklmn')]).toEqual([verb, 'no']);
    expect(can('get', 'secrets', '-n', 'team-x7k2abcdefghijklmn')).toBe('no');
    expect(can('create', 'rolebindings.rbac.authorization.k8s.io', '-n', 'team-x7k2abcdefghijklmn')).toBe('yes');
    expect(can('bind', 'clusterroles.rbac.authorization.k8s.io/cp-cloudplane-team-namespace')).toBe('yes');
    for (const other of ['cluster-admin', 'admin', 'edit', 'cp-cloudplane'])
      expect([other, can('bind', `clusterroles.rbac.authorization.k8s.io/${other}`)]).toEqual([other, 'no']);
    expect(can('escalate', 'clusterroles.rbac.authorization.k8s.io')).toBe('no');
  });
});

/**
 * The Helm chart in tests: helm itself (built once, cached like the other tools), rendering
 * the chart, and running the operator with exactly the rights the chart grants it, so a
 * driver that needs a verb the chart's RBAC lacks fails its test with the API server's 403.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { auditLines, auditLogOf, kubectlBinary, KubeApiServer } from './kube-apiserver';
import { kubernetesApiCalls, Scope } from '../../src/store/kubernetes/api-calls';
import { customResourcePlurals } from '../../src/resources/crd';
import { packageRoot } from '../../src/lib/package-root';

/** The repository, from test/helpers (jest) or dist/test/helpers (a built benchmark) alike. */
const REPO = packageRoot(__dirname);
export const CHART = path.join(REPO, 'charts/cloudplane');
export const NAMESPACE = 'cloudplane-system';

/** A tool of scripts/build-<tool>.sh, building it when it is missing; undefined if that is impossible here. */
function findOrBuild(tool: 'helm' | 'kube-score'): { binary?: string; why?: string } {
  const cached = path.join(process.env.CLOUDPLANE_TOOLS_BIN ?? path.join(os.homedir(), '.cache/cloudplane/bin'), tool);
  if (fs.existsSync(cached)) return { binary: cached };
  const built = spawnSync(path.join(REPO, `scripts/build-${tool}.sh`), { encoding: 'utf8', timeout: 15 * 60_000 });
  const printed = built.stdout?.trim().split('\n').pop();
  if (built.status === 0 && printed && fs.existsSync(printed)) return { binary: printed };
  return { why: `scripts/build-${tool}.sh failed (${built.error?.message ?? `exit ${built.status}`}): ${(built.stderr ?? '').slice(-500)}` };
}

/** The helm binary, building it when it is missing; undefined if that is impossible here. */
export function findOrBuildHelm(): { helm?: string; why?: string } {
  const { binary, why } = findOrBuild('helm');
  return { helm: binary, why };
}

/** The kube-score binary (scripts/build-kube-score.sh), building it when it is missing. */
export function findOrBuildKubeScore(): { kubeScore?: string; why?: string } {
  const { binary, why } = findOrBuild('kube-score');
  return { kubeScore: binary, why };
}

export function runHelm(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const { helm, why } = findOrBuildHelm();
  if (!helm) throw new Error(`no helm binary: ${why}`);
  const result = spawnSync(helm, args, { encoding: 'utf8', env: { ...process.env, KUBECONFIG: '/dev/null' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `helm template` output, failing the test with helm's message when it refuses. */
export function render(sets: string[] = []): string {
  const result = runHelm(['template', 'cp', CHART, '--namespace', NAMESPACE, ...sets.flatMap((s) => ['--set', s])]);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return result.stdout;
}

let defaultObjects: any[] | undefined;
/**
 * The objects of the chart rendered with its defaults, rendered and parsed once per test
 * file: every cluster of an API-suite file asks for them three times (its RBAC, the names
 * bound in team namespaces, the operator's user in the audit log), and the chart does not
 * change during a run.
 */
function chartObjects(): any[] {
  defaultObjects ??= parseAllDocuments(render())
    .map((d) => d.toJS())
    .filter(Boolean);
  return defaultObjects;
}

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

/**
 * Applies the chart's ServiceAccount and RBAC to `cluster` (as an admin installing the
 * chart would), and writes a kubeconfig that authenticates as that ServiceAccount with a
 * token the API server issues: the operator run with it has the chart's rights and no more.
 */
export function operatorKubeconfigFromChart(cluster: KubeApiServer, dir: string): string {
  const kubectl = (args: string[], input?: string) =>
    execFileSync(kubectlBinary(), ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
  const objects = chartObjects().filter((o) => RBAC_KINDS.has(o.kind));
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  // One apply, the namespace first: each kubectl run against a new API server begins with discovery.
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } };
  kubectl(['apply', '-f', '-'], [namespace, ...objects].map((o) => stringify(o)).join('---\n'));
  const token = kubectl(['create', 'token', account.metadata.name, '-n', NAMESPACE, '--duration', '2h']).trim();
  const cluster0 = parse(cluster.kubeconfigYaml).clusters[0];
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [cluster0],
    users: [{ name: 'operator', user: { token } }],
    contexts: [{ name: 'operator', context: { cluster: cluster0.name, user: 'operator' } }],
    'current-context': 'operator',
  };
  const file = path.join(dir, 'operator.kubeconfig');
  fs.writeFileSync(file, JSON.stringify(kubeconfig), { mode: 0o600 });
  return file;
}

/** The chart's ServiceAccount and team-namespace ClusterRole, by name. */
function chartNames(): { serviceAccount: string; teamNamespaceRole: string } {
  const objects = chartObjects();
  const teamRole = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name.endsWith('-team-namespace'));
  return { serviceAccount: objects.find((o) => o.kind === 'ServiceAccount').metadata.name, teamNamespaceRole: teamRole.metadata.name };
}

/** What the chart's Deployment tells the operator to bind in each team namespace it makes: which ClusterRole, to whom. */
export function teamNamespaceBindingEnv(): Record<string, string> {
  const { serviceAccount, teamNamespaceRole } = chartNames();
  return { CLOUDPLANE_TEAM_NAMESPACE_ROLE: teamNamespaceRole, CLOUDPLANE_SERVICE_ACCOUNT_NAME: serviceAccount };
}

/** What the operator runs with as the chart's ServiceAccount, under its RBAC: the kubeconfig (operatorKubeconfigFromChart) and teamNamespaceBindingEnv. */
export function operatorEnvFromChart(cluster: KubeApiServer, dir: string): Record<string, string> {
  return { CLOUDPLANE_KUBECONFIG: operatorKubeconfigFromChart(cluster, dir), ...teamNamespaceBindingEnv() };
}

/**
 * A team's namespace as the operator makes one (labelled as its own, with the RoleBinding
 * of its ServiceAccount to the team-namespace ClusterRole), made as an admin: for tests
 * that run a driver under the chart's RBAC without the store that would make it.
 */
export function teamNamespaceAsTheOperatorMakesIt(cluster: KubeApiServer, namespace: string): void {
  const { serviceAccount, teamNamespaceRole } = chartNames();
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { 'app.kubernetes.io/managed-by': 'cloudplane' } } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: teamNamespaceRole, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: teamNamespaceRole },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: NAMESPACE }],
    },
  ];
  execFileSync(kubectlBinary(), ['--kubeconfig', cluster.kubeconfigPath, 'apply', '-f', '-'], {
    input: objects.map((o) => stringify(o)).join('---\n'),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** One request of the operator's, as the API server's audit log has it. */
export interface OperatorCall {
  group: string;
  /** With `/subresource` where there is one. */
  resource: string;
  verb: string;
  /** Where it went: the system namespace, a team's, across namespaces (or a cluster-scoped resource), or elsewhere. */
  scope: Scope | 'elsewhere';
  namespace?: string;
  code?: number;
  /** Whether the API server's authorizer (RBAC) refused it; an admission plugin's 403 is no such refusal. */
  forbidden: boolean;
  uri: string;
}

/** The chart's ServiceAccount as the API server names its user. */
function operatorUser(): string {
  const account = chartObjects().find((o) => o.kind === 'ServiceAccount');
  return `system:serviceaccount:${NAMESPACE}:${account.metadata.name}`;
}

function scopeOf(resource: string, namespace: string | undefined): OperatorCall['scope'] {
  if (resource === 'namespaces' || !namespace) return 'cluster';
  if (namespace === NAMESPACE) return 'system-namespace';
  return /^team-[0-9a-z]+$/.test(namespace) ? 'team-namespaces' : 'elsewhere';
}

/**
 * Every resource request the operator made so far on `cluster` (kube-apiserver.ts audits
 * the chart's service accounts). Discovery (/api, /apis/...) is left out: every
 * authenticated user may read it (the cluster's system:discovery role).
 */
export function operatorCalls(cluster: KubeApiServer): OperatorCall[] {
  const user = operatorUser();
  const calls: OperatorCall[] = [];
  for (const event of auditLines(cluster)) {
    const ref = event.objectRef;
    if (event.user?.username !== user || !ref?.resource) continue;
    const resource = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
    calls.push({
      group: ref.apiGroup ?? '',
      resource,
      verb: event.verb,
      scope: scopeOf(ref.resource, ref.namespace),
      namespace: ref.namespace,
      code: event.responseStatus?.code,
      forbidden: event.annotations?.['authorization.k8s.io/decision'] === 'forbid',
      uri: event.requestURI,
    });
  }
  return calls;
}

/**
 * Whether src/store/kubernetes/api-calls.ts lists the call: the team-namespace grants hold
 * in the system namespace too (the chart binds them there), and the cluster-wide ones in
 * every namespace of the operator's.
 */
export function isListed(call: OperatorCall): boolean {
  const scopes: Scope[] =
    call.scope === 'system-namespace'
      ? ['system-namespace', 'team-namespaces', 'cluster']
      : call.scope === 'team-namespaces'
        ? ['team-namespaces', 'cluster']
        : call.scope === 'elsewhere'
          ? []
          : [call.scope];
  return kubernetesApiCalls(customResourcePlurals()).some(
    (c) => c.group === call.group && c.resources.includes(call.resource) && (c.verbs as string[]).includes(call.verb) && scopes.includes(c.scope),
  );
}

/**
 * Fails when the operator made a call the list of calls lacks, or one RBAC refused (a
 * 403 of the authorizer, not of an admission plugin): either means the chart's RBAC and
 * the code differ.
 * Returns the calls, for tests that check some were made.
 */
export function expectOnlyListedCalls(cluster: KubeApiServer): OperatorCall[] {
  const calls = operatorCalls(cluster);
  // To see which listed calls a set of test files made between them (one call a line, as JSON).
  if (process.env.CLOUDPLANE_TEST_CALLS_OUT) fs.appendFileSync(process.env.CLOUDPLANE_TEST_CALLS_OUT, calls.map((c) => JSON.stringify(c)).join('\n') + '\n');
  if (calls.length === 0) throw new Error(`the audit log ${auditLogOf(cluster)} holds no call of the operator's: is it running as the chart's ServiceAccount?`);
  const describe = (c: OperatorCall) =>
    `${c.verb} ${c.group || 'core'}/${c.resource} (${c.scope}${c.namespace ? ` ${c.namespace}` : ''}) -> ${c.code}: ${c.uri}`;
  const unlisted = [...new Set(calls.filter((c) => !isListed(c)).map(describe))];
  const refused = [...new Set(calls.filter((c) => c.forbidden).map(describe))];
  if (unlisted.length > 0 || refused.length > 0) {
    throw new Error(
      `the operator's calls and its RBAC differ.\nNot in src/store/kubernetes/api-calls.ts:\n  ${unlisted.join('\n  ') || '(none)'}\nRefused (403):\n  ${refused.join('\n  ') || '(none)'}`,
    );
  }
  return calls;
}

/**
 * The Helm chart in tests: helm itself (built once, cached like the other tools), rendering
 * the chart, and running the operator with exactly the rights the chart grants it, so a
 * driver that needs a verb the chart's RBAC lacks fails its test with the API server's 403.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kubectlBinary, KubeApiServer } from './kube-apiserver';

const REPO = path.resolve(__dirname, '../..');
export const CHART = path.join(REPO, 'charts/cloudplane');
export const NAMESPACE = 'cloudplane-system';

/** The helm binary, building it when it is missing; undefined if that is impossible here. */
export function findOrBuildHelm(): { helm?: string; why?: string } {
  const cached = path.join(process.env.CLOUDPLANE_TOOLS_BIN ?? path.join(os.homedir(), '.cache/cloudplane/bin'), 'helm');
  if (fs.existsSync(cached)) return { helm: cached };
  const built = spawnSync(path.join(REPO, 'scripts/build-helm.sh'), { encoding: 'utf8', timeout: 15 * 60_000 });
  const printed = built.stdout?.trim().split('\n').pop();
  if (built.status === 0 && printed && fs.existsSync(printed)) return { helm: printed };
  return { why: `scripts/build-helm.sh failed (${built.error?.message ?? `exit ${built.status}`}): ${(built.stderr ?? '').slice(-500)}` };
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

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

/**
 * Applies the chart's ServiceAccount and RBAC to `cluster` (as an admin installing the
 * chart would), and writes a kubeconfig that authenticates as that ServiceAccount with a
 * token the API server issues: the operator run with it has the chart's rights and no more.
 */
export function operatorKubeconfigFromChart(cluster: KubeApiServer, dir: string): string {
  const kubectl = (args: string[], input?: string) =>
    execFileSync(kubectlBinary(), ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
  const objects = parseAllDocuments(render()).map((d) => d.toJS()).filter((o) => o && RBAC_KINDS.has(o.kind));
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  kubectl(['apply', '-f', '-'], stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }));
  kubectl(['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
  const token = kubectl(['create', 'token', account.metadata.name, '-n', NAMESPACE, '--duration', '2h']).trim();
  const admin = JSON.parse(kubectl(['config', 'view', '--raw', '-o', 'json']));
  const cluster0 = admin.clusters[0];
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

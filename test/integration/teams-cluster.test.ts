/**
 * A second team and a viewer in cluster mode, as a platform team would try it after
 * installing the chart: the operator runs as the chart's ServiceAccount with the chart's
 * RBAC (test/helpers/chart.ts), the installation admin creates a team through the API, its
 * owner invites a viewer and makes the viewer's key, and the viewer is refused a write.
 * The team is a namespace of its own, with its records as custom resources there.
 */
import { execFileSync } from 'node:child_process';
import { namespaceOfTeam } from '../../src/store/kubernetes/names';
import { operatorEnvFromChart } from '../helpers/chart';
import { clusterFor } from '../helpers/cluster';
import { kubectlBinary } from '../helpers/kube-apiserver';
import { startTestService, tempDataDir, TestService } from '../helpers/service';
import type { KubeApiServer } from '../helpers/kube-apiserver';

jest.setTimeout(180_000);

const SYSTEM_NAMESPACE = 'cloudplane-system';

describe('teams in cluster mode, under the chart RBAC', () => {
  let cluster: KubeApiServer;
  let t: TestService;

  const kubectl = (...args: string[]) => execFileSync(kubectlBinary(), ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8' });

  beforeAll(async () => {
    const dataDir = tempDataDir();
    cluster = await clusterFor(dataDir);
    t = await startTestService(
      {
        CLOUDPLANE_STORE: 'kubernetes',
        ...operatorEnvFromChart(cluster, cluster.workDir),
        CLOUDPLANE_SYSTEM_NAMESPACE: SYSTEM_NAMESPACE,
        CLOUDPLANE_PROVIDER: 'simulated',
      },
      dataDir,
    );
  });
  afterAll(async () => {
    await t?.stop();
    await cluster?.stop();
  });

  it('creates a second team with a viewer through the API, and refuses the viewer a write', async () => {
    const created = await t.api('POST', '/api/v1/teams', { name: 'Platform', owner_email: 'lead@platform.example' });
    expect(created.status).toBe(201);
    const teamId = created.body.data.id;
    const owner = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key: created.body.data.api_key.key });

    const invited = await owner('POST', '/api/v1/settings/team/members', { email: 'auditor@platform.example', role: 'viewer' });
    expect(invited.status).toBe(201);
    const viewerKey = (await owner('POST', '/api/v1/settings/api-keys', { name: 'auditor', user_id: invited.body.data.id })).body.data.key;
    const viewer = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key: viewerKey });

    expect((await owner('POST', '/api/v1/load-balancers', { name: 'web', region: 'fra1' })).status).toBe(201);
    const read = await viewer('GET', '/api/v1/load-balancers');
    expect(read.status).toBe(200);
    expect(read.body.data.map((lb: { name: string }) => lb.name)).toEqual(['web']);
    const refused = await viewer('POST', '/api/v1/load-balancers', { name: 'nope', region: 'fra1' });
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: 'forbidden' });

    // The team is a namespace; its users are custom resources there, the viewer's role among them.
    const namespace = namespaceOfTeam(teamId, SYSTEM_NAMESPACE);
    expect(kubectl('get', 'namespace', namespace, '-o', 'name').trim()).toBe(`namespace/${namespace}`);
    const roles = JSON.parse(kubectl('get', 'users.cloudplane.dev', '-n', namespace, '-o', 'json')).items.map((u: { spec: { role: string } }) => u.spec.role);
    expect(roles.sort()).toEqual(['owner', 'viewer']);
    // The first team's owner, an installation admin, lists the new team; the new team's owner may not.
    expect((await t.api('GET', '/api/v1/teams')).body.data.map((team: { id: string }) => team.id)).toContain(teamId);
    expect((await owner('GET', '/api/v1/teams')).status).toBe(403);
  });
});

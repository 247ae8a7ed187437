/**
 * CLOUDPLANE_INIT_DIR (docs/testing.md, "A local cloud made from manifests"): the custom
 * resource manifests of a folder are the first team's resources at the install's first
 * start, taken in as kubectl-made resources are (a spec the create rules refuse starts
 * `failed` with the API's message); a later start applies nothing again; a manifest of the
 * wrong shape stops start-up naming its file and document. Runs on both stores.
 */
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestService, tempDataDir, TestService, waitForStatus } from '../helpers/service';
import { clusterMode } from '../helpers/cluster';

jest.setTimeout(90_000);

const MANIFESTS = {
  '10-web.yaml': `
apiVersion: cloudplane.dev/v1alpha1
kind: LoadBalancer
metadata:
  name: web
spec:
  name: web
  region: fra1
  algorithm: round_robin
  protocol: http
  port: 80
  health_check_path: /healthz
  sticky_sessions: false
`,
  '20-stack.yaml': `
apiVersion: cloudplane.dev/v1alpha1
kind: Server
metadata:
  name: app-1
spec:
  name: app-1
  region: fra1
  plan: s-1vcpu-1gb
  image: ubuntu-24.04
  power_state: "on"
  reboot_requests: 0
---
apiVersion: cloudplane.dev/v1alpha1
kind: Bucket
metadata:
  name: assets
spec:
  name: assets
  region: nowhere1
`,
  'README.txt': 'not a manifest: left alone',
};

function folderOf(files: Record<string, string>): string {
  const dir = path.join(tempDataDir(), 'init');
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

const byName = async (t: TestService, list: string, name: string) =>
  eventually(async () => ((await t.api('GET', `${list}?limit=100`)).body.data as any[]).find((r) => r.name === name), 30_000);

describe('init manifests', () => {
  it("make the first team's resources at the first start, and nothing again at the next", async () => {
    const dataDir = tempDataDir();
    const env = { CLOUDPLANE_INIT_DIR: folderOf(MANIFESTS) };
    const first = await startTestService(env, dataDir);
    const key = first.key;
    try {
      const web = await byName(first, '/api/v1/load-balancers', 'web');
      await waitForStatus(first, `/api/v1/load-balancers/${web.id}`, 'running', 30_000);
      const app = await byName(first, '/api/v1/servers', 'app-1');
      await waitForStatus(first, `/api/v1/servers/${app.id}`, 'running', 30_000);
      // The create rules judge it as a POST: an unknown region is refused, shown on the resource.
      const assets = await byName(first, '/api/v1/object-storage', 'assets');
      const refused = await waitForStatus(first, `/api/v1/object-storage/${assets.id}`, 'failed', 30_000);
      expect(refused.status_reason).toMatch(/region/);
      // It left out 'public', which the refused rules would have defaulted: shown with its type's value.
      expect(refused.public).toBe(false);
    } finally {
      await first.stop();
    }
    const again = await startTestService({ ...env, CLOUDPLANE_BOOTSTRAP_API_KEY: key }, dataDir);
    try {
      expect((await again.api('GET', '/api/v1/load-balancers?limit=100')).body.data).toHaveLength(1);
      expect((await again.api('GET', '/api/v1/servers?limit=100')).body.data).toHaveLength(1);
    } finally {
      await again.stop();
    }
  });

  // Refused before the store opens, whichever it is: on the embedded store only, sparing a cluster per case.
  (clusterMode() ? it.skip : it).each([
    [{ 'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\n' }, /bad\.yaml#1: apiVersion must be cloudplane\.dev\/v1alpha1/],
    [{ 'bad.yaml': 'apiVersion: cloudplane.dev/v1alpha1\nkind: Team\nspec: {}\n' }, /bad\.yaml#1: kind must be one of LoadBalancer/],
    [
      {
        'ok.yaml': MANIFESTS['10-web.yaml'],
        'two.yaml': `${MANIFESTS['10-web.yaml']}---\napiVersion: cloudplane.dev/v1alpha1\nkind: Server\nspec:\n  region: 7\n`,
      },
      /two\.yaml#2: spec/,
    ],
    [{ 'broken.yaml': 'apiVersion: [\n' }, /broken\.yaml#1: /],
  ])('refuse to start on a manifest of the wrong shape, naming it', async (files, message) => {
    await expect(startTestService({ CLOUDPLANE_INIT_DIR: folderOf(files) })).rejects.toThrow(message);
  });
});

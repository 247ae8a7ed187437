/**
 * Replicas of the operator started at the same moment on an empty cluster (a fresh
 * `helm install` with several replicas) must agree: one first team, one cursor-signing
 * key (a list cursor from one replica pages on another), the configured key valid on all.
 */
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { tempDataDir } from '../helpers/service';

jest.setTimeout(120_000);

const KEY = 'cpk_ReplicasStart0123456789abcdefghijABCDEFG';
let server: KubeApiServer;
const replicas: ChildService[] = [];

beforeAll(async () => {
  server = await startKubeApiServer();
  await installCrds(server);
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
  await server?.stop();
});

test('three replicas starting at once make one first team and share one cursor key', async () => {
  const started = await Promise.all(
    ['a', 'b', 'c'].map((name) =>
      startChildService({
        dataDir: tempDataDir(),
        key: KEY,
        startTimeoutMs: 60_000,
        env: {
          ...storeEnvFor(server),
          CLOUDPLANE_SIM_DELAY_MS: '50',
          POD_NAME: `replica-${name}`,
        },
      }),
    ),
  );
  replicas.push(...started);

  const teams = await Promise.all(replicas.map(async (r) => (await r.api('GET', '/api/v1/settings/team')).body.data));
  for (const team of teams) expect(team).toBeDefined();
  expect(new Set(teams.map((t) => t.id)).size).toBe(1);

  // Every replica accepts the configured key, and lists the same single bootstrap key.
  const keyLists = await Promise.all(replicas.map(async (r) => (await r.api('GET', '/api/v1/settings/api-keys')).body.data));
  for (const keys of keyLists) expect(keys.map((k: { id: string }) => k.id)).toEqual(keyLists[0].map((k: { id: string }) => k.id));

  // A cursor made by one replica pages on another.
  for (let i = 0; i < 3; i++) {
    expect((await replicas[0].api('POST', '/api/v1/object-storage', { name: `shared-${i}`, region: 'fra1' })).status).toBe(201);
  }
  const first = await replicas[0].api('GET', '/api/v1/object-storage?limit=2');
  expect(first.body.meta.next_cursor).toEqual(expect.any(String));
  for (const other of replicas.slice(1)) {
    const next = await other.api('GET', `/api/v1/object-storage?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
    expect(next.status).toBe(200);
  }
});

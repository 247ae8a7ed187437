/**
 * Quotas across replicas (docs/api.md, Quotas): two operator processes on one
 * kube-apiserver count a team's quota in one ledger Secret, so creates sent to both at
 * once take the last place once, and a deleted resource frees its place on either.
 */
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, tempDataDir } from '../helpers/service';

jest.setTimeout(180_000);

const KEY = 'cpk_QuotaReplicas0123456789abcdefghijklmnAB';
const QUOTA = 3;
let server: KubeApiServer;
const replicas: ChildService[] = [];

beforeAll(async () => {
  server = await startKubeApiServer();
  await installCrds(server);
  const env = (name: string) => ({ ...storeEnvFor(server), CLOUDPLANE_SIM_DELAY_MS: '50', CLOUDPLANE_QUOTAS: `load_balancer=${QUOTA}`, POD_NAME: `replica-${name}` });
  replicas.push(...(await Promise.all(['a', 'b'].map((name) => startChildService({ dataDir: tempDataDir(), key: KEY, startTimeoutMs: 60_000, env: env(name) })))));
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
  await server?.stop();
});

const create = (replica: ChildService, name: string) => replica.api('POST', '/api/v1/load-balancers', { name, region: 'fra1' });

test('creates sent to both replicas at once take the last place once', async () => {
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(replicas[i % 2], `quota-race-${i}`)));
  const codes = answers.map((a) => (a.status === 201 ? 201 : `${a.status} ${a.body.error?.code}`));
  expect(codes.filter((c) => c === 201)).toHaveLength(QUOTA);
  expect(codes.filter((c) => c !== 201)).toEqual(Array(12 - QUOTA).fill('422 quota_exceeded'));
  for (const replica of replicas) {
    await eventually(async () => (await replica.api('GET', '/api/v1/load-balancers?limit=100')).body.data.length === QUOTA, 30_000);
  }
});

test('a resource deleted on one replica frees its place on the other', async () => {
  const [a, b] = replicas;
  const listed = (await a.api('GET', '/api/v1/load-balancers?limit=100')).body.data as Array<{ id: string }>;
  expect(listed).toHaveLength(QUOTA);
  expect((await create(b, 'quota-full')).status).toBe(422);
  expect((await a.api('DELETE', `/api/v1/load-balancers/${listed[0].id}`)).status).toBeLessThan(300);
  await eventually(async () => (await create(b, 'quota-freed')).status === 201, 60_000, 500);
  expect((await create(a, 'quota-full-again')).body.error?.code).toBe('quota_exceeded');
});

/**
 * Idempotency-Key across replicas (docs/api.md, Idempotency): two operator processes on one
 * kube-apiserver keep one record per key (a Secret claimed create-if-absent), so a retry
 * that lands on the other replica, or the same request sent to both at once, does the work
 * once.
 */
import { randomUUID } from 'node:crypto';
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { tempDataDir } from '../helpers/service';

jest.setTimeout(180_000);

const KEY = 'cpk_IdempotencyReplicas0123456789abcdefghijAB';
let server: KubeApiServer;
const replicas: ChildService[] = [];

beforeAll(async () => {
  server = await startKubeApiServer();
  await installCrds(server);
  const env = (name: string) => ({ ...storeEnvFor(server), CLOUDPLANE_SIM_DELAY_MS: '50', POD_NAME: `replica-${name}` });
  replicas.push(
    ...(await Promise.all(['a', 'b'].map((name) => startChildService({ dataDir: tempDataDir(), key: KEY, startTimeoutMs: 60_000, env: env(name) })))),
  );
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
  await server?.stop();
});

const named = async (replica: ChildService, name: string) =>
  ((await replica.api('GET', '/api/v1/load-balancers?limit=100')).body.data as Array<{ id: string; name: string }>).filter((lb) => lb.name === name);

test('a retry on the other replica answers the first answer again', async () => {
  const [a, b] = replicas;
  const key = { headers: { 'idempotency-key': randomUUID() } };
  const body = { name: 'replica-retry', region: 'fra1' };
  const first = await a.api('POST', '/api/v1/load-balancers', body, key);
  expect(first.status).toBe(201);
  const again = await b.api('POST', '/api/v1/load-balancers', body, key);
  expect(again.status).toBe(201);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body.data.id).toBe(first.body.data.id);
  expect(again.headers.get('location')).toBe(first.headers.get('location'));
  expect((await named(b, 'replica-retry')).map((lb) => lb.id)).toEqual([first.body.data.id]);
});

test('the same request sent to both replicas at once is done once', async () => {
  const key = { headers: { 'idempotency-key': randomUUID() } };
  const body = { name: 'replica-race', region: 'fra1' };
  const answers = await Promise.all([0, 1, 2, 3].map((i) => replicas[i % 2].api('POST', '/api/v1/load-balancers', body, key)));
  const worked = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
  expect(worked).toHaveLength(1);
  for (const a of answers) {
    if (a.status === 201) expect(a.body.data.id).toBe(worked[0].body.data.id);
    else expect([a.status, a.body.error.code]).toEqual([409, 'resource_busy']);
  }
  expect((await named(replicas[0], 'replica-race')).map((lb) => lb.id)).toEqual([worked[0].body.data.id]);
});

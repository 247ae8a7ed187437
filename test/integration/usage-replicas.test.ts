/**
 * Usage metering across replicas and a crash (docs/api.md, Usage): operator processes on
 * one kube-apiserver each count the requests they serve and flush them to records of their
 * own, so every replica answers the team's whole count; the leader records resource
 * intervals in the store, so they outlive a SIGKILL of the leader, and the next leader
 * goes on metering.
 */
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { eventually, tempDataDir } from '../helpers/service';

jest.setTimeout(240_000);

const ADMIN_KEY = 'cpk_UsageReplicas0123456789abcdefghijklmnopAB';
let server: KubeApiServer;
const replicas: ChildService[] = [];

const replicaEnv = (name: string) => ({
  ...storeEnvFor(server),
  CLOUDPLANE_SIM_DELAY_MS: '50',
  CLOUDPLANE_USAGE_FLUSH_SECONDS: '0.2',
  CLOUDPLANE_LEASE_DURATION_SECONDS: '2',
  POD_NAME: `replica-${name}`,
});
const startReplica = async (name: string) => {
  const replica = await startChildService({ dataDir: tempDataDir(), key: ADMIN_KEY, startTimeoutMs: 60_000, env: replicaEnv(name) });
  replicas.push(replica);
  return replica;
};

beforeAll(async () => {
  server = await startKubeApiServer();
  await installCrds(server);
  await Promise.all([startReplica('a'), startReplica('b')]);
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.kill().catch(() => undefined)));
  await server?.stop();
});

test("every replica answers the team's whole usage, and it survives the leader's SIGKILL", async () => {
  const [a, b] = replicas;
  // A team of its own: the only requests it makes are the ones below, counted here.
  const team = await a.api('POST', '/api/v1/teams', { name: 'Metered', owner_email: 'owner@metered.example' });
  expect(team.status).toBe(201);
  const key = team.body.data.api_key.key as string;
  let made = 0;
  const call = async (replica: ChildService, method: string, path: string, body?: unknown) => {
    const res = await replica.api(method, path, body, { key });
    expect(res.status).not.toBe(401);
    made++;
    return res;
  };
  /** Whether `replica` answers exactly the requests made before this read. */
  const countsAll = async (replica: ChildService) => {
    const expected = made;
    return (await call(replica, 'GET', '/api/v1/usage')).body.data.api_requests.quantity === expected;
  };
  const loadBalancerRow = async (replica: ChildService) =>
    (await call(replica, 'GET', '/api/v1/usage')).body.data.resources.find((r: any) => r.family === 'load_balancer');

  for (let i = 0; i < 5; i++) await call(a, 'GET', '/api/v1/regions');
  for (let i = 0; i < 7; i++) await call(b, 'GET', '/api/v1/regions');
  await eventually(() => countsAll(a), 30_000);
  await eventually(() => countsAll(b), 30_000);

  // A load balancer made and deleted through one replica is metered once, seen alike by both.
  const lb = (await call(b, 'POST', '/api/v1/load-balancers', { name: 'metered-lb', region: 'fra1' })).body.data.id;
  await eventually(async () => (await call(b, 'GET', `/api/v1/load-balancers/${lb}`)).body.data.status === 'running', 30_000);
  await eventually(async () => ((await loadBalancerRow(a))?.quantity ?? 0) > 0, 30_000);
  expect((await call(a, 'DELETE', `/api/v1/load-balancers/${lb}`)).status).toBe(200);
  await eventually(async () => (await call(a, 'GET', `/api/v1/load-balancers/${lb}`)).body.data.status === 'deleted', 30_000);
  const closed = await eventually(async () => {
    const [first, second] = [await loadBalancerRow(a), await loadBalancerRow(b)];
    await new Promise((resolve) => setTimeout(resolve, 500));
    const again = await loadBalancerRow(a);
    return first && second && again && first.quantity === second.quantity && again.quantity === first.quantity && first;
  }, 30_000);
  expect(closed).toMatchObject({ family: 'load_balancer', plan: 'standard', unit: 'hours', resources: 1 });

  // Once the other replica shows all of a's requests, a has flushed them: kill it.
  await eventually(() => countsAll(b), 30_000);
  await a.kill();
  const c = await startReplica('c');
  await eventually(() => countsAll(c), 30_000);
  expect(await loadBalancerRow(c)).toEqual(closed);

  // The next leader goes on recording: a server made now is metered, under its plan.
  const svr = (await call(c, 'POST', '/api/v1/servers', { name: 'after-crash', region: 'fra1' })).body.data;
  const row = await eventually(async () => {
    const found = (await call(c, 'GET', '/api/v1/usage')).body.data.resources.find((r: any) => r.family === 'server');
    return found?.quantity > 0 && found;
  }, 60_000);
  expect(row).toMatchObject({ plan: svr.plan, resources: 1 });
  await eventually(() => countsAll(b), 30_000);
});

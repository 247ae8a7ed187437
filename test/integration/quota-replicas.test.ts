/**
 * Quotas across replicas (docs/api.md, Quotas): two operator processes on one
 * kube-apiserver and one nats-server count a team's quota in one ledger of the shared
 * key-value bucket, so creates sent to both at once take the last place once, a deleted
 * resource frees its place on either, and a revoked API key frees its place at once.
 */
import type { ChildService } from '../helpers/child-service';
import { Install, startReplicas } from '../helpers/replicas';
import { eventually } from '../helpers/service';

jest.setTimeout(180_000);

const KEY = 'cpk_QuotaReplicas0123456789abcdefghijklmnAB';
const QUOTA = 3;
let install: Install;
let replicas: ChildService[];

beforeAll(async () => {
  install = await startReplicas(KEY, { CLOUDPLANE_SIM_DELAY_MS: '50', CLOUDPLANE_QUOTAS: `load_balancer=${QUOTA},api_key=${QUOTA}` });
  replicas = install.replicas;
});

afterAll(async () => {
  await install?.stop();
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

test('an API key revoked on one replica frees its place on the other at once', async () => {
  const [a, b] = replicas;
  const createKey = (replica: ChildService, name: string) => replica.api('POST', '/api/v1/settings/api-keys', { name });
  // The key the replicas started with is one of the quota's places.
  const made = await Promise.all(Array.from({ length: 4 }, (_, i) => createKey(replicas[i % 2], `key-${i}`)));
  expect(made.map((m) => m.status).sort()).toEqual([201, 201, 422, 422]);
  const first = made.find((m) => m.status === 201)!.body.data.id as string;
  expect((await a.api('DELETE', `/api/v1/settings/api-keys/${first}`)).status).toBe(204);
  const again = await createKey(b, 'key-after-revoke');
  expect(again.status).toBe(201);
  expect((await createKey(a, 'key-over')).body.error?.code).toBe('quota_exceeded');
});

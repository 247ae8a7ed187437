/**
 * The per-key rate limit across replicas (docs/api.md, Rate limit): two operator
 * processes on one kube-apiserver and one nats-server lease a key's places of the window
 * from one shared count, so requests spread over both get the limit once in all, not
 * once per replica.
 */
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { KubeApiServer, startKubeApiServer } from '../helpers/kube-apiserver';
import { tempDataDir } from '../helpers/service';
import { NatsServer, startNatsServer } from '../helpers/nats-server';

jest.setTimeout(180_000);

const KEY = 'cpk_RateLimitReplicas0123456789abcdefghijkAB';
const LIMIT = 40;
let server: KubeApiServer;
let nats: NatsServer;
const replicas: ChildService[] = [];

beforeAll(async () => {
  [server, nats] = await Promise.all([startKubeApiServer(), startNatsServer()]);
  await installCrds(server);
  const env = (name: string) => ({ ...storeEnvFor(server), CLOUDPLANE_NATS_URL: nats.url, CLOUDPLANE_RATE_LIMIT_PER_MINUTE: String(LIMIT), POD_NAME: `replica-${name}` });
  replicas.push(...(await Promise.all(['a', 'b'].map((name) => startChildService({ dataDir: tempDataDir(), key: KEY, startTimeoutMs: 60_000, env: env(name) })))));
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
  await Promise.all([server?.stop(), nats?.stop()]);
});

test("a key's requests spread over both replicas get the limit once in all", async () => {
  // Start early in a window, so every request of the test falls in the same one.
  const intoWindow = Date.now() % 60_000;
  if (intoWindow > 30_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoWindow + 100));
  const answers = [];
  for (let round = 0; round < 3; round++) {
    answers.push(...(await Promise.all(Array.from({ length: LIMIT }, (_, i) => replicas[i % 2].api('GET', '/api/v1/load-balancers')))));
  }
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
  expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
  const refused = answers.find((a) => a.status === 429)!;
  expect(refused.body.error.code).toBe('rate_limit_exceeded');
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
});

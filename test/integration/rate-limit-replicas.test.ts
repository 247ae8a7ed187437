/**
 * The per-key rate limit across replicas (docs/api.md, Rate limit): two operator
 * processes on one kube-apiserver and one nats-server lease a key's places of the window
 * from one shared count, so requests spread over both get the limit once in all, not
 * once per replica.
 */
import { Install, startReplicas } from '../helpers/replicas';

jest.setTimeout(180_000);

const KEY = 'cpk_RateLimitReplicas0123456789abcdefghijkAB';
const LIMIT = 40;
let install: Install;

beforeAll(async () => {
  install = await startReplicas(KEY, { CLOUDPLANE_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
});

afterAll(async () => {
  await install?.stop();
});

test("a key's requests spread over both replicas get the limit once in all", async () => {
  // Start early in a window, so every request of the test falls in the same one.
  const intoWindow = Date.now() % 60_000;
  if (intoWindow > 30_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoWindow + 100));
  const answers = [];
  for (let round = 0; round < 3; round++) {
    answers.push(...(await Promise.all(Array.from({ length: LIMIT }, (_, i) => install.replicas[i % 2].api('GET', '/api/v1/load-balancers')))));
  }
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
  expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
  const refused = answers.find((a) => a.status === 429)!;
  expect(refused.body.error.code).toBe('rate_limit_exceeded');
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
});

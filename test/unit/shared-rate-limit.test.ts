/**
 * The per-key rate limit shared by replicas (src/api/plugins/shared-request-counts.ts):
 * two limiters on one store, as two replicas, let a key's requests through once up to
 * the limit in all, wherever they land, while leasing its places in batches (the
 * shared record is written far less often than once per request). The embedded store
 * stands in for the shared one: the count relies only on its addSecret / swapSecret.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { RateLimiter } from '../../src/api/plugins/rate-limit';
import { requestCountName, SharedRequestCounts } from '../../src/api/plugins/shared-request-counts';

const TEAM = 'team_ratelimit00000000000000';
const LIMIT = 200;
// The middle of a window, so every request of a test falls in the same one.
const NOW = Date.UTC(2026, 10, 28, 12, 0, 30);

let dir: string;
let store: EmbeddedStore;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-rate-'));
  store = new EmbeddedStore({ dataDir: dir });
  await store.start();
});
afterEach(async () => {
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const replicas = () => [new RateLimiter(LIMIT, new SharedRequestCounts(store, LIMIT)), new RateLimiter(LIMIT, new SharedRequestCounts(store, LIMIT))];
const key = { id: 'key:key_one', team: TEAM };

test("a key's requests spread over two replicas get the limit once in all", async () => {
  const [a, b] = replicas();
  const taken = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => (i % 2 === 0 ? a : b).take(key, NOW)));
  expect(taken.filter((t) => t.allowed)).toHaveLength(LIMIT);
  for (const t of taken.slice(-10)) expect([t.allowed, t.remaining]).toEqual([false, 0]);
  expect(await store.getSecret(TEAM, requestCountName(key.id))).toEqual({ window: new Date(NOW - 30_000).toISOString(), leased: String(LIMIT) });
});

test('places are leased in batches, not one write per request', async () => {
  const [a, b] = replicas();
  let writes = 0;
  let last = '';
  for (let i = 0; i < LIMIT; i++) {
    expect((await (i % 2 === 0 ? a : b).take(key, NOW)).allowed).toBe(true);
    const leased = (await store.getSecret(TEAM, requestCountName(key.id)))?.leased ?? '';
    if (leased !== last) writes++;
    last = leased;
  }
  // A tenth of the limit per batch while there is plenty, then shrinking batches: far fewer writes than requests.
  expect(writes).toBeLessThanOrEqual(LIMIT / 4);
  expect((await a.take(key, NOW)).allowed).toBe(false);
});

test('another window starts a new count, and other keys and client addresses are counted apart', async () => {
  const [a, b] = replicas();
  for (let i = 0; i < LIMIT; i++) await a.take(key, NOW);
  expect((await b.take(key, NOW)).allowed).toBe(false);
  expect((await b.take({ id: 'key:key_two', team: TEAM }, NOW)).remaining).toBe(LIMIT - 1);
  expect((await b.take({ id: 'ip:127.0.0.1' }, NOW)).allowed).toBe(true);
  const next = await b.take(key, NOW + 60_000);
  expect([next.allowed, next.remaining]).toEqual([true, LIMIT - 1]);
});

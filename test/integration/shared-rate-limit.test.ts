/**
 * The per-key rate limit shared by replicas (src/api/plugins/shared-request-counts.ts):
 * two limiters, as two replicas, each with its own connection to one real nats-server's
 * key-value bucket, let a key's requests through once up to the limit in all, wherever
 * they land, while leasing its places in batches (the shared record is written far less
 * often than once per request); with NATS gone each counts on its own.
 */
import { RateLimiter } from '../../src/api/plugins/rate-limit';
import { requestCountName, SharedRequestCounts } from '../../src/api/plugins/shared-request-counts';
import { NatsSharedRecords } from '../../src/store/nats-shared-records';
import { NatsServer, startNatsServer } from '../helpers/nats-server';
import { eventually } from '../helpers/service';

const LIMIT = 200;
// The middle of a window, so every request of a test falls in the same one.
const NOW = Date.UTC(2026, 10, 28, 12, 0, 30);
const WINDOW = NOW - 30_000;

let nats: NatsServer;
let records: NatsSharedRecords[] = [];
let bucket = 0;
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await nats?.stop();
});
beforeEach(async () => {
  // A bucket per test, so no test sees another's counts.
  bucket++;
  records = [0, 1].map(() => new NatsSharedRecords({ servers: [nats.url], bucket: `COUNTS_${bucket}` }));
  for (const r of records) await r.start();
});
afterEach(async () => {
  for (const r of records) await r.stop();
});

const replicas = () => records.map((r) => new RateLimiter(LIMIT, new SharedRequestCounts(r, LIMIT)));
const key = { id: 'key:key_one', shared: true };
const leasedOf = async (client: string, windowStart = WINDOW) => (await records[0].read(requestCountName(client, windowStart)))?.data.leased;

test("a key's requests spread over two replicas get the limit once in all", async () => {
  const [a, b] = replicas();
  const taken = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => (i % 2 === 0 ? a : b).take(key, NOW)));
  expect(taken.filter((t) => t.allowed)).toHaveLength(LIMIT);
  for (const t of taken.slice(-10)) expect([t.allowed, t.remaining]).toEqual([false, 0]);
  expect(await leasedOf(key.id)).toBe(String(LIMIT));
});

test('places are leased in batches, not one write per request', async () => {
  const [a, b] = replicas();
  let writes = 0;
  let last = '';
  for (let i = 0; i < LIMIT; i++) {
    expect((await (i % 2 === 0 ? a : b).take(key, NOW)).allowed).toBe(true);
    const leased = (await leasedOf(key.id)) ?? '';
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
  expect((await b.take({ id: 'key:key_two', shared: true }, NOW)).remaining).toBe(LIMIT - 1);
  expect((await b.take({ id: 'ip:127.0.0.1', shared: false }, NOW)).allowed).toBe(true);
  // A client address is counted by the process: nothing written for it.
  expect(await leasedOf('ip:127.0.0.1')).toBeUndefined();
  const next = await b.take(key, NOW + 60_000);
  expect([next.allowed, next.remaining]).toEqual([true, LIMIT - 1]);
});

test('with NATS gone each replica counts on its own rather than refuse, and shares again once it is back', async () => {
  const failures: Error[] = [];
  const alone = new RateLimiter(LIMIT, new SharedRequestCounts(records[0], LIMIT), (err) => failures.push(err));
  await nats.kill();
  for (let i = 0; i < LIMIT; i++) expect((await alone.take(key, NOW)).allowed).toBe(true);
  expect((await alone.take(key, NOW)).allowed).toBe(false);
  // One failed lease for the window: its other requests did not wait on NATS again.
  expect(failures).toHaveLength(1);

  await nats.restart();
  let window = 0;
  await eventually(
    async () => {
      window++;
      await alone.take(key, NOW + window * 60_000);
      return (await leasedOf(key.id, WINDOW + window * 60_000)) !== undefined;
    },
    30_000,
    500,
  );
});

/**
 * The quota ledger (src/resources/quota-ledger.ts) that counts a team's quota across
 * replicas, in a real nats-server's key-value bucket: claims raced without any process
 * lock (as two replicas race) take the last place once; a crashed replica's claim holds
 * its place until its lease lapses; a create another replica wrote counts before this
 * replica's store shows it (or shows it without its status yet); a deleted resource and a create that failed free their places.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { listedKindOf } from '../../src/resources/store-of-record';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { holdsQuota } from '../../src/resources/quota';
import { claimInLedger, ledgerName, QuotaRule } from '../../src/resources/quota-ledger';
import { ApiError } from '../../src/lib/errors';
import { NatsSharedRecords } from '../../src/store/nats-shared-records';
import { NatsServer, startNatsServer } from '../helpers/nats-server';
import { eventually } from '../helpers/service';

const TEAM = 'team_ledger000000000000000';
const LIMIT = 3;
const rule: QuotaRule = {
  quota: 'load_balancer',
  family: loadBalancerFamily,
  title: loadBalancerFamily.title,
  holds: (object) => holdsQuota(loadBalancerFamily, object),
  held: (store, team) => store.count(loadBalancerFamily.kind, team),
};

let dir: string;
let store: EmbeddedStore;
let nats: NatsServer;
let records: NatsSharedRecords;
let bucket = 0;
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await nats?.stop();
});
beforeEach(async () => {
  records = new NatsSharedRecords({ servers: [nats.url], bucket: `LEDGER_${++bucket}` });
  await records.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-ledger-'));
  store = new EmbeddedStore({ dataDir: dir, listed: [listedKindOf(loadBalancerFamily)] });
  await store.start();
});
afterEach(async () => {
  await records.stop();
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const lb = (id: string) => ({ meta: { kind: 'LoadBalancer', id, team: TEAM }, spec: { name: id, region: 'fra1' }, status: { status: 'running' } });

/** A create as a route runs it: claim, write, end. Answers the error code of a refusal. */
async function create(id: string): Promise<string> {
  try {
    const claim = await claimInLedger(store, records, rule, TEAM, LIMIT, [id]);
    await store.create(lb(id));
    await claim.end(true);
    return 'created';
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
}

const inOneHour = () => new Date(Date.now() + 3_600_000).toISOString();
const anHourAgo = () => new Date(Date.now() - 3_600_000).toISOString();
const LEDGER = ledgerName(TEAM, 'load_balancer');
/** Writes the ledger as another replica would. */
async function putLedger(entries: Record<string, string>): Promise<void> {
  expect(await records.swap(LEDGER, await records.read(LEDGER), entries)).toBe(true);
}

test('creates racing for the last places take them once', async () => {
  await store.create(lb('lb_existing'));
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(`lb_race${i}`)));
  expect(answers.filter((a) => a === 'created')).toHaveLength(LIMIT - 1);
  expect(answers.filter((a) => a !== 'created').every((a) => a === 'quota_exceeded')).toBe(true);
  expect(await store.count('LoadBalancer', TEAM)).toBe(LIMIT);
});

test("a crashed replica's claim holds its place until its lease lapses", async () => {
  await create('lb_one');
  await create('lb_two');
  await putLedger({ lb_crashed: `pending ${inOneHour()}` });
  expect(await create('lb_three')).toBe('quota_exceeded');
  await putLedger({ lb_crashed: `pending ${anHourAgo()}` });
  expect(await create('lb_three')).toBe('created');
  expect(Object.keys((await records.read(LEDGER))!.data)).not.toContain('lb_crashed');
});

test('a create another replica wrote counts before this store shows it', async () => {
  await create('lb_one');
  await create('lb_two');
  await putLedger({ lb_elsewhere: `written ${inOneHour()}` });
  expect(await create('lb_three')).toBe('quota_exceeded');
});

test('a create another replica wrote counts while this store shows it without its status yet', async () => {
  await create('lb_one');
  await create('lb_two');
  // The custom resource's create is seen, its status write (a second write) not yet: the
  // Kubernetes store shows such an object with an empty status (custom-resource.ts, toStored).
  await store.create({ meta: { kind: 'LoadBalancer', id: 'lb_elsewhere', team: TEAM }, spec: { name: 'lb_elsewhere', region: 'fra1' }, status: {} });
  await putLedger({ lb_elsewhere: `written ${inOneHour()}` });
  expect(await create('lb_three')).toBe('quota_exceeded');
});

test('a deleted resource and a failed create free their places', async () => {
  for (const id of ['lb_one', 'lb_two', 'lb_three']) expect(await create(id)).toBe('created');
  expect(await create('lb_four')).toBe('quota_exceeded');

  const gone = (await store.get<unknown, Record<string, unknown>>('LoadBalancer', TEAM, 'lb_two'))!;
  await store.updateStatus({ ...gone, status: { status: 'deleted' } });
  const failed = await claimInLedger(store, records, rule, TEAM, LIMIT, ['lb_failed']);
  await failed.end(false);
  expect(await create('lb_four')).toBe('created');
});

test('with NATS gone the records fail at once (no caller waits for a timeout), and serve again once it is back', async () => {
  await create('lb_one');
  await nats.kill();
  // From the client's disconnect on, a call is refused without going out.
  await eventually(
    async () =>
      (await records.read(LEDGER).then(
        () => '',
        (err: Error) => err.message,
      )) === 'NATS is not connected',
    10_000,
    50,
  );
  await expect(claimInLedger(store, records, rule, TEAM, LIMIT, ['lb_two'])).rejects.toThrow('NATS is not connected');
  await nats.restart();
  await eventually(
    async () =>
      await records.read(LEDGER).then(
        () => true,
        () => false,
      ),
    30_000,
    200,
  );
  expect(await create('lb_two')).toBe('created');
});

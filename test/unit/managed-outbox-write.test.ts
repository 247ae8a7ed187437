/**
 * The managed reconciler's writes from creating to running: a replayable step's record
 * (drivers/types.ts Step.replayable) is held until the state it explains is written, and
 * every status write, through the writer, takes the relay's published events out of the
 * outbox with it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { ManagedReconciler } from '../../src/controllers/managed';
import { Driven } from '../../src/controllers/driven';
import { loadBalancerBinding } from '../../src/controllers/load-balancer';
import { loadBalancerFamily, LoadBalancerSpec } from '../../src/resources/load-balancer';
import { SimulatedLoadBalancerDriver } from '../../src/drivers/simulated/families';
import { Simulation } from '../../src/drivers/simulated/simulation';
import pino from 'pino';
import { fieldOf } from '../../src/lib/unknown-values';
import { OutboxRelay } from '../../src/events/outbox-relay';
import { EmbeddedEventBus } from '../../src/events/embedded-bus';

const TEAM = 'team_outboxwrite000000000';
const spec = (name: string): LoadBalancerSpec => ({
  name,
  region: 'fra1',
  algorithm: 'round_robin',
  protocol: 'http',
  port: 80,
  health_check_path: '/healthz',
  sticky_sessions: false,
  ssl_certificate_id: null,
  backends: [],
});

let dir: string;
let store: EmbeddedStore;
let writer: ResourceWriter;
let bus: EmbeddedEventBus;
let relay: OutboxRelay;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-outbox-write-'));
  store = new EmbeddedStore({ dataDir: path.join(dir, 'store') });
  await store.start();
  writer = new ResourceWriter(store);
  bus = new EmbeddedEventBus(path.join(dir, 'bus'));
  await bus.start();
  // The relay never takes events out itself here: what leaves the outbox, a status write took out.
  relay = new OutboxRelay(store, bus, [loadBalancerFamily.kind], pino({ level: 'silent' }), { drainDelayMs: 600_000 });
});
afterEach(async () => {
  await relay.stop().catch(() => undefined);
  await bus.stop();
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The reconciler of load balancers on a simulated provider that takes `delayMs`. */
const reconcilerOf = (delayMs = 600_000) =>
  new ManagedReconciler(
    loadBalancerBinding(new SimulatedLoadBalancerDriver(new Simulation({ delayMs, delays: {}, failures: {} })), store, 1_000),
    store,
    writer,
    60_000,
  );

const current = async (id: string) => (await store.get(loadBalancerFamily.kind, TEAM, id)) as Driven;

/** Every write of the load balancer, as the store's watch saw it. */
const writesOf = (id: string) => {
  const seen: string[] = [];
  const stop = store.watch(({ object }) => {
    if (object.meta.id === id) seen.push(String(fieldOf(object.status, 'status')));
  });
  return { seen, stop };
};

/** Passes, a few milliseconds apart, until the reconciler has written it running. */
async function untilRunning(reconciler: ManagedReconciler, id: string): Promise<Driven> {
  for (let pass = 0; (await current(id)).status.status === 'creating' && pass < 100; pass++) {
    await reconciler.reconcile(TEAM, id);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return current(id);
}

it("writes a load balancer once from creating to running: the driver's record rides with the state it explains", async () => {
  await relay.start();
  writer.drainPublishedWith(relay);
  const reconciler = reconcilerOf(20);
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('new'), 'system');
  const [created] = (await current(meta.id)).status.pending_events;
  for (let i = 0; i < 200 && !relay.isPublished(created.id); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const writes = writesOf(meta.id);

  await reconciler.reconcile(TEAM, meta.id);
  // The simulated provisioning is under way; its record is held, not written.
  expect((await current(meta.id)).status.external).toBeUndefined();
  const running = await untilRunning(reconciler, meta.id);
  writes.stop();

  expect(running.status.status).toBe('running');
  expect(running.status.external).toEqual(expect.objectContaining({ provision: expect.objectContaining({ started_at: expect.any(String) }) }));
  expect(writes.seen).toEqual(['running']);
  // The creation event, on the bus by then, left the outbox with that write.
  expect(running.status.pending_events.map((e) => e.type)).toEqual(['load_balancer.running']);
});

it('starts the step again when the record it held is lost (a restart, a new leader), and still reaches running', async () => {
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('restarted'), 'system');
  await reconcilerOf(600_000).reconcile(TEAM, meta.id);
  expect((await current(meta.id)).status.external).toBeUndefined();

  const running = await untilRunning(reconcilerOf(20), meta.id);
  expect(running.status.status).toBe('running');
  expect(running.status.external).toBeDefined();
});

it('releases what a held record names when the resource is deleted before it ran', async () => {
  const reconciler = reconcilerOf(600_000);
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('leaving'), 'system');
  await reconciler.reconcile(TEAM, meta.id);
  await store.requestDeletion(loadBalancerFamily.kind, TEAM, meta.id);
  await reconciler.reconcile(TEAM, meta.id);
  const deleting = await current(meta.id);
  expect(deleting.status.status).toBe('deleted');
  // The release is due for what the held record names, not for an empty record.
  expect(deleting.status.external).toEqual(expect.objectContaining({ provision: expect.any(Object) }));
});

it("takes the relay's published events out of the outbox with any status write, once told to, and only those", async () => {
  const pendingOf = async (id: string) => (await current(id)).status.pending_events.map((e) => e.type);
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('drained'), 'system');
  const [created] = (await current(meta.id)).status.pending_events;
  await relay.start();
  for (let i = 0; i < 200 && !relay.isPublished(created.id); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(relay.isPublished(created.id)).toBe(true);

  // Not told (a replica that does not lead): a write keeps what is on the bus in the outbox.
  await writer.mutateStatus(loadBalancerFamily, TEAM, meta.id, () => ({ health: 'unknown' }), 'system');
  expect(await pendingOf(meta.id)).toEqual(['load_balancer.created']);

  writer.drainPublishedWith(relay);
  await writer.mutateStatus(loadBalancerFamily, TEAM, meta.id, () => ({ status: 'running' }), 'system');
  // The creation event left with the write; the write's own event is in its place, not yet published.
  expect(await pendingOf(meta.id)).toEqual(['load_balancer.running']);
});

/**
 * Which objects the outbox relay leaves to the managed reconciler's next write rather
 * than write first, when a pass of theirs is queued (outbox-relay.ts): those in their
 * first state, which the reconciler writes next (the start of the provisioning, its end);
 * and every status write, through the writer, takes the published events out with it.
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

it('says the reconciler writes a resource next while it is creating, provisioning started or not, and no longer once it runs', async () => {
  const reconciler = reconcilerOf(1);
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('new'), 'system');
  expect(reconciler.passWritesOutbox(await current(meta.id))).toBe(true);

  await reconciler.reconcile(TEAM, meta.id);
  const started = await current(meta.id);
  expect(started.status.external).toBeDefined();
  expect(reconciler.passWritesOutbox(started)).toBe(started.status.status === 'creating');

  // The simulated provider is done within milliseconds: passes until the reconciler has written it running.
  for (let pass = 0; (await current(meta.id)).status.status === 'creating' && pass < 100; pass++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    await reconciler.reconcile(TEAM, meta.id);
  }
  const running = await current(meta.id);
  expect(running.status.status).toBe('running');
  expect(reconciler.passWritesOutbox(running)).toBe(false);
});

it('says nothing of a resource being deleted', async () => {
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('leaving'), 'system');
  expect(reconcilerOf().passWritesOutbox(await current(meta.id))).toBe(true);
  await store.requestDeletion(loadBalancerFamily.kind, TEAM, meta.id);
  expect(reconcilerOf().passWritesOutbox(await current(meta.id))).toBe(false);
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

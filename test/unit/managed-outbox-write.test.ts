/**
 * Which objects the outbox relay leaves to the managed reconciler's next write rather
 * than write first, when a pass of theirs is queued (outbox-relay.ts): those in their
 * first state, which the reconciler writes next (the start of the provisioning, its end),
 * taking published events out in the same write.
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
import { OutboxRelay, PublishedEvents } from '../../src/events/outbox-relay';
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
/** The relay whose published events the reconciler's writes take out (not started: nothing is published here). */
let relay: PublishedEvents;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-outbox-write-'));
  store = new EmbeddedStore({ dataDir: path.join(dir, 'store') });
  await store.start();
  writer = new ResourceWriter(store);
  relay = new OutboxRelay(store, new EmbeddedEventBus(path.join(dir, 'bus')), [loadBalancerFamily.kind], pino({ level: 'silent' }));
});
afterEach(async () => {
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The reconciler of load balancers on a simulated provider that takes `delayMs`. */
const reconcilerOf = (outbox?: PublishedEvents, delayMs = 600_000) =>
  new ManagedReconciler(
    loadBalancerBinding(new SimulatedLoadBalancerDriver(new Simulation({ delayMs, delays: {}, failures: {} })), store, 1_000),
    store,
    writer,
    60_000,
    undefined,
    outbox,
  );

const current = async (id: string) => (await store.get(loadBalancerFamily.kind, TEAM, id)) as Driven;

it('says the reconciler writes a resource next while it is creating, provisioning started or not, and no longer once it runs', async () => {
  const reconciler = reconcilerOf(relay, 1);
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

it('says nothing of a resource being deleted, nor without a relay whose events its writes take out', async () => {
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec('leaving'), 'system');
  expect(reconcilerOf().passWritesOutbox(await current(meta.id))).toBe(false);
  await store.requestDeletion(loadBalancerFamily.kind, TEAM, meta.id);
  expect(reconcilerOf(relay).passWritesOutbox(await current(meta.id))).toBe(false);
});

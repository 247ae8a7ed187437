/**
 * The watch event of a pass's own write queues no pass when the pass says it settled there
 * (ReconcileResult.settledVersion), whether the store tells of the write within the pass
 * (the embedded store) or after it (the Kubernetes store's watch); any other change still
 * does. And the managed reconciler claims it only for a write that kept the state, made on
 * the version the pass read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Controller, Reconciler } from '../../src/controllers/controller';
import { EmbeddedStore } from '../../src/store/embedded';
import type { Store, StoredObject, WatchEvent } from '../../src/store/types';
import { createLogger } from '../../src/logger';
import { ResourceWriter } from '../../src/resources/writer';
import { ManagedReconciler } from '../../src/controllers/managed';
import { Driven } from '../../src/controllers/driven';
import { loadBalancerBinding } from '../../src/controllers/load-balancer';
import { loadBalancerFamily, LoadBalancerSpec } from '../../src/resources/load-balancer';
import { SimulatedLoadBalancerDriver } from '../../src/drivers/simulated/families';
import { Simulation } from '../../src/drivers/simulated/simulation';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const logger = createLogger('silent');
const TEAM = 'team_ownwrites00000000000';
const widget = (id: string) => ({ meta: { kind: 'Widget', id, team: TEAM }, spec: {}, status: { state: 'a', n: 0 } });

let dir: string;
let store: EmbeddedStore;
let controller: Controller | undefined;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-own-writes-'));
  store = new EmbeddedStore({ dataDir: dir });
  await store.start();
});
afterEach(async () => {
  await controller?.stop();
  controller = undefined;
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The store, telling of each change a turn of the event loop later, as a watch over the network does: after the write's answer. */
function watchingLater(inner: Store): Store {
  return new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'watch') return (listener: (event: WatchEvent) => void) => target.watch((event) => setImmediate(() => listener(event)));
      const value = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * A reconciler of widgets that counts its passes and, on a widget's first pass, bumps its
 * status counter and says it settled at that write; `duringPass` runs after that write.
 */
function counting(duringPass: (id: string) => Promise<void> = async () => undefined) {
  const passes: string[] = [];
  const reconciler: Reconciler = {
    kind: 'Widget',
    async reconcile(team, id) {
      passes.push(id);
      if (passes.filter((p) => p === id).length > 1) return;
      const current = (await store.get('Widget', team, id)) as StoredObject<unknown, { state: string; n: number }>;
      const written = await store.updateStatus({ ...current, status: { ...current.status, n: current.status.n + 1 } });
      await duringPass(id);
      return { settledVersion: written.meta.resourceVersion };
    },
  };
  const of = (id: string) => passes.filter((p) => p === id).length;
  /** Waits until `id` has had `count` passes. */
  const passed = async (id: string, count: number) => {
    for (const deadline = Date.now() + 5_000; of(id) < count; await sleep(5)) {
      if (Date.now() > deadline) throw new Error(`${id} had ${of(id)} passes, not ${count}`);
    }
  };
  return { reconciler, of, passed };
}

describe("the watch event of a pass's own write", () => {
  // One worker and a first-in, first-out queue: once `marker` has had its pass, any pass queued before it has run.
  for (const [how, storeOf] of [
    ['told within the pass (embedded store)', (s: Store) => s],
    ['told after the pass (a watch over the network)', watchingLater],
  ] as const) {
    it(`queues no pass when the pass settled there, ${how}; a change by another writer does`, async () => {
      const { reconciler, of, passed } = counting();
      controller = new Controller(storeOf(store), reconciler, { workers: 1, resyncMs: 60_000, logger });
      await controller.start();
      await store.create(widget('w'));
      await passed('w', 1);
      await store.create(widget('marker'));
      await passed('marker', 1);
      await sleep(10);
      await store.create(widget('marker2'));
      await passed('marker2', 1);
      expect(of('w')).toBe(1);

      const current = (await store.get('Widget', TEAM, 'w'))!;
      await store.updateStatus({ ...current, status: { state: 'b', n: 1 } });
      await passed('w', 2);
    });
  }

  it('queues a pass when another write came in during the pass, after its own', async () => {
    const { reconciler, passed } = counting(async (id) => {
      if (id !== 'w') return;
      const current = (await store.get('Widget', TEAM, id))!;
      await store.updateStatus({ ...current, status: { state: 'c', n: 9 } });
    });
    controller = new Controller(store, reconciler, { workers: 1, resyncMs: 60_000, logger });
    await controller.start();
    await store.create(widget('w'));
    await passed('w', 2);
  });
});

describe('the managed reconciler', () => {
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
  const reconcilerOf = (delayMs: number, driver = new SimulatedLoadBalancerDriver(new Simulation({ delayMs, delays: {}, failures: {} }))) =>
    new ManagedReconciler(loadBalancerBinding(driver, store, 1_000), store, new ResourceWriter(store), 60_000);
  const current = async (id: string) => (await store.get(loadBalancerFamily.kind, TEAM, id)) as Driven;
  /** The simulated driver, its records said to be needed at once (Step.replayable false), as a provider's own ids would be. */
  const unreplayable = (delayMs: number) => {
    const driver = new SimulatedLoadBalancerDriver(new Simulation({ delayMs, delays: {}, failures: {} }));
    const create = driver.create.bind(driver);
    driver.create = async (managed) => ({ ...(await create(managed)), replayable: false });
    return driver;
  };

  it('holds the record of a replayable step it started, writing nothing until the state it explains', async () => {
    const made = await new ResourceWriter(store).create(loadBalancerFamily, TEAM, spec('held'), 'system');
    const result = await reconcilerOf(600_000).reconcile(TEAM, made.meta.id);
    expect((await current(made.meta.id)).meta.resourceVersion).toBe(made.meta.resourceVersion);
    expect(result).not.toHaveProperty('settledVersion');
  });

  it('says it settled at the record of a provisioning it started, and not at the write that made the resource running', async () => {
    const writer = new ResourceWriter(store);
    const provisioning = await writer.create(loadBalancerFamily, TEAM, spec('slow'), 'system');
    const started = await reconcilerOf(600_000, unreplayable(600_000)).reconcile(TEAM, provisioning.meta.id);
    const recorded = await current(provisioning.meta.id);
    expect(recorded.status.status).toBe('creating');
    expect(recorded.status.external).toBeDefined();
    expect(started).toMatchObject({ settledVersion: recorded.meta.resourceVersion });

    const quick = reconcilerOf(1);
    const made = await writer.create(loadBalancerFamily, TEAM, spec('quick'), 'system');
    let result = await quick.reconcile(TEAM, made.meta.id);
    for (let pass = 0; (await current(made.meta.id)).status.status === 'creating' && pass < 100; pass++) {
      await sleep(5);
      result = await quick.reconcile(TEAM, made.meta.id);
    }
    expect((await current(made.meta.id)).status.status).toBe('running');
    expect(result).not.toHaveProperty('settledVersion');
  });

  it('does not say so of a write made on another version than the one it read', async () => {
    const driver = unreplayable(600_000);
    const create = driver.create.bind(driver);
    // Another writer changes the resource while the driver works: the pass's write lands on that version.
    driver.create = async (managed) => {
      const latest = await current(managed.id);
      await store.update({ ...latest, meta: { ...latest.meta, labels: { ...latest.meta.labels, touched: 'yes' } } });
      return create(managed);
    };
    const made = await new ResourceWriter(store).create(loadBalancerFamily, TEAM, spec('raced'), 'system');
    const result = await reconcilerOf(600_000, driver).reconcile(TEAM, made.meta.id);
    const written = await current(made.meta.id);
    expect(written.status.external).toBeDefined();
    expect(written.meta.labels.touched).toBe('yes');
    expect(result).not.toHaveProperty('settledVersion');
  });
});

/**
 * A step the team's own limits refuse (drivers/types.ts OwnerRefusal: the namespace's
 * ResourceQuota, as test/integration/server-pods.test.ts shows against a real API server)
 * is said on the resource and tried again later, while the resource keeps its state; once
 * there is room it provisions and the reason is cleared.
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
import { OwnerRefusal } from '../../src/drivers/types';

const TEAM = 'team_ownerrefusal00000000';
const spec: LoadBalancerSpec = {
  name: 'full',
  region: 'fra1',
  algorithm: 'round_robin',
  protocol: 'http',
  port: 80,
  health_check_path: '/healthz',
  sticky_sessions: false,
  ssl_certificate_id: null,
  backends: [],
};
const REFUSAL =
  'creating Deployment: HTTP 403: deployments.apps "full" is forbidden: exceeded quota: team-limits, requested: count/deployments.apps=1, used: count/deployments.apps=5, limited: count/deployments.apps=5';

/** The simulated provider, whose creates the team's namespace has no room for while `full`. */
class FullNamespace extends SimulatedLoadBalancerDriver {
  full = true;
  override async create(...args: Parameters<SimulatedLoadBalancerDriver['create']>) {
    if (this.full) throw new OwnerRefusal(REFUSAL);
    return super.create(...args);
  }
}

let dir: string;
let store: EmbeddedStore;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-owner-refusal-'));
  store = new EmbeddedStore({ dataDir: dir });
  await store.start();
});
afterEach(async () => {
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

it("says the team's limit on the resource, keeps it creating and tries again; clears it once provisioned", async () => {
  const writer = new ResourceWriter(store);
  const driver = new FullNamespace(new Simulation({ delayMs: 1, delays: {}, failures: {} }));
  const reconciler = new ManagedReconciler(loadBalancerBinding(driver, store, 1_000), store, writer, 60_000);
  const { meta } = await writer.create(loadBalancerFamily, TEAM, spec, 'system');
  const current = async () => (await store.get(loadBalancerFamily.kind, TEAM, meta.id)) as Driven;

  const result = await reconciler.reconcile(TEAM, meta.id);
  expect(result).toMatchObject({ requeueAfterMs: 30_000 });
  expect((await current()).status).toMatchObject({ status: 'creating', status_reason: `Waiting for room in the team's limits: ${REFUSAL}.` });
  // The provider answered: its health is untouched.
  expect(driver.health().state).toBe('connected');

  driver.full = false;
  for (let pass = 0; (await current()).status.status === 'creating' && pass < 100; pass++) {
    await reconciler.reconcile(TEAM, meta.id);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect((await current()).status).toMatchObject({ status: 'running', status_reason: null });
});

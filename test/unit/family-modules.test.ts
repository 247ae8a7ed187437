/**
 * The family modules (src/families/): the list every registry is derived from holds each
 * defined family once, start-up names a family left out of either list, and what the
 * service runs comes from the modules: a reconciler for every family that has one, the
 * configured driver of every driven family.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { families } from '../../src/resources/registry';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { bucketFamily, fileShareFamily } from '../../src/resources/storage';
import { threadFamily } from '../../src/resources/agent';
import { FAMILY_MODULES, DRIVER_FAMILIES } from '../../src/families';
import { buildFamilies, checkFamilyModules } from '../../src/families/build';
import { familyModule } from '../../src/families/module';
import { buildReconcilers } from '../../src/controllers/registry';
import { quotaLimits } from '../../src/resources/quota';

const logger = createLogger('silent');

test('the modules hold every defined family, each once', () => {
  expect(() => checkFamilyModules(FAMILY_MODULES, families)).not.toThrow();
  expect(
    FAMILY_MODULES.flatMap((m) => m.families.map((f) => f.name))
      .slice()
      .sort(),
  ).toEqual(families.map((f) => f.name).sort());
});

test('a family left out of either list, or in two modules, is named', () => {
  const withoutLoadBalancers = FAMILY_MODULES.filter((m) => !m.families.includes(loadBalancerFamily));
  expect(() => checkFamilyModules(withoutLoadBalancers, families)).toThrow(
    'the load_balancer family (src/resources/registry.ts) has no module in src/families/index.ts',
  );
  const twice = [...FAMILY_MODULES, familyModule({ families: [threadFamily] })];
  expect(() => checkFamilyModules(twice, families)).toThrow('the thread family is in 2 modules of src/families/index.ts; it belongs in one');
  expect(() =>
    checkFamilyModules(
      FAMILY_MODULES,
      families.filter((f) => f !== threadFamily),
    ),
  ).toThrow('the thread family has a module but is not in src/resources/registry.ts');
  expect(() => buildFamilies(withoutLoadBalancers, families, loadConfig({}), logger)).toThrow('the load_balancer family');
});

test('a family whose spec offers a connection Secret must say what it holds', () => {
  const { connectionDetails: _declared, ...silentLoadBalancers } = loadBalancerFamily;
  const defined = families.map((f) => (f === loadBalancerFamily ? silentLoadBalancers : f));
  const modules = FAMILY_MODULES.map((m) => (m.families.includes(loadBalancerFamily) ? { ...m, families: [silentLoadBalancers] } : m));
  expect(() => checkFamilyModules(modules, defined)).toThrow(
    'the load_balancer family offers writeConnectionSecretToRef but does not declare its connectionDetails',
  );
  // Every family that offers it declares it.
  for (const family of families)
    if ('writeConnectionSecretToRef' in family.schemas.spec.properties)
      expect([family.name, typeof family.connectionDetails]).toEqual([family.name, 'function']);
});

test('connection details are what the record shows, once known', () => {
  const lb = { meta: {}, spec: { port: 443, protocol: 'https' }, status: { ipv4: '203.0.113.7' } };
  expect(loadBalancerFamily.connectionDetails?.(lb as never, 'cp-team-a')).toEqual({
    address: '203.0.113.7',
    port: '443',
    protocol: 'https',
    url: 'https://203.0.113.7:443',
  });
  expect(loadBalancerFamily.connectionDetails?.({ ...lb, status: { ipv4: null } } as never, 'cp-team-a')).toBeNull();
  const share = (target: string) => fileShareFamily.connectionDetails?.({ meta: {}, spec: {}, status: { mount_target: target } } as never, 'cp-team-a');
  expect(share('cp-team-a/fs-data')).toEqual({ mount_target: 'cp-team-a/fs-data', claim_name: 'fs-data' });
  expect(share('10.0.0.4:/exports/data')).toEqual({ mount_target: '10.0.0.4:/exports/data', nfs_server: '10.0.0.4', nfs_path: '/exports/data' });
  const bucket = bucketFamily.connectionDetails?.(
    { meta: {}, spec: { name: 'logs', region: 'fra1' }, status: { endpoint: 'https://s3.example', s3_bucket: null } } as never,
    'cp-team-a',
  );
  expect(bucket).toEqual({ endpoint: 'https://s3.example', bucket: 'logs', region: 'fra1' });
});

test('the driven families are the ones with drivers, each with its configured driver', () => {
  expect(DRIVER_FAMILIES).toEqual(['load_balancer', 'vpn_gateway', 'server', 'bucket', 'file_share', 'database', 'kubernetes_cluster', 'job', 'backup']);
  const built = buildFamilies(FAMILY_MODULES, families, loadConfig({ CLOUDPLANE_DRIVER_BUCKET: 's3' }), logger);
  expect(Object.keys(built.drivers.chosen).sort()).toEqual([...DRIVER_FAMILIES].sort());
  expect(built.drivers.chosen.bucket).toBe('s3');
  expect(built.drivers.chosen.load_balancer).toBe('simulated');
  // A family without drivers reports a connected provider.
  expect(built.drivers.health('thread')).toBe('connected');
});

describe('the reconcilers the leader runs', () => {
  let dir: string;
  let store: EmbeddedStore;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-family-modules-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
  });
  afterAll(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('are one per reconciled kind, from the modules, plus the servers’ and databases’ backup policies and the databases’ backups', () => {
    const config = loadConfig({});
    const built = buildFamilies(FAMILY_MODULES, families, config, logger);
    const writer = new ResourceWriter(store);
    const quota = { store, limits: quotaLimits(families, {}) };
    const kinds = buildReconcilers({ store, writer, config, quota }, built.reconcilers).map((r) => r.kind);
    // Threads, messages and deliveries are written by the agent and the dispatcher, not reconciled.
    const reconciled = families.filter((f) => !['thread', 'message', 'delivery'].includes(f.name)).map((f) => f.kind);
    expect(kinds.slice().sort()).toEqual([...reconciled, 'Server', 'Database', 'ServerBackup'].sort());
  });
});

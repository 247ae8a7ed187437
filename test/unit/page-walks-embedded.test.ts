/**
 * Page walks over the embedded store's ordered indexes keep docs/api.md's promise for
 * lists under random interleavings of writes and pages (test/helpers/page-walk-property.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { checkPageWalks, listedForTest } from '../helpers/page-walk-property';

jest.setTimeout(120_000);

describe('page walks on the embedded store', () => {
  let dir: string;
  let store: EmbeddedStore;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-walks-'));
    store = new EmbeddedStore({ dataDir: dir, listed: [listedForTest] });
    await store.start();
  });
  afterAll(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('visits every object that matched for the whole walk exactly once, in order, whatever is written meanwhile', async () => {
    await checkPageWalks({ store: () => store, numRuns: 150, maxActions: 40 });
  });

  it('keeps its indexes across a restart: they are rebuilt from the snapshot and the log', async () => {
    const team = 'team_restart';
    const spec = (name: string) => ({
      name,
      region: 'fra1',
      algorithm: 'ip_hash',
      protocol: 'http',
      port: 80,
      health_check_path: '/health',
      sticky_sessions: false,
      backends: [],
    });
    for (const name of ['b', 'a', 'c'])
      await store.create({ meta: { kind: 'LoadBalancer', id: `lb_${name}`, team }, spec: spec(name), status: { status: 'running' } });
    await store.stop();
    store = new EmbeddedStore({ dataDir: dir, listed: [listedForTest] });
    await store.start();
    const page = await store.page('LoadBalancer', team, { sort: 'name', order: 'asc', limit: 2 });
    expect(page.items.map((o) => o.meta.id)).toEqual(['lb_a', 'lb_b']);
    expect(page.next).toEqual({ value: 'b', id: 'lb_b' });
  });
});

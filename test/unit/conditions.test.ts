/**
 * The Synced condition's reason tells an adoption refusal (SpecRefused, judged again when
 * the spec changes) from a provider failure (ReconcileError). Later status writes on a
 * failed resource must keep whichever it is, or a refusal would stop being re-judged.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { SPEC_REFUSED } from '../../src/resources/transitions';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import type { Resource } from '../../src/resources/family';

const TEAM = 'team_conditions000000';
const spec = { name: 'web', region: 'fra1', algorithm: 'round_robin', protocol: 'http', port: 80, health_check_path: '/', sticky_sessions: false, ssl_certificate_id: null, backends: [] };
const syncedReason = (r: Resource) => r.status.conditions?.find((c) => c.type === 'Synced')?.reason;

describe('Synced condition reasons', () => {
  let dir: string;
  let store: EmbeddedStore;
  let writer: ResourceWriter;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-conditions-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
    writer = new ResourceWriter(store);
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps SpecRefused through later status writes while the resource stays failed', async () => {
    const made = (await store.create({ meta: { kind: loadBalancerFamily.kind, id: 'lb_refused0000000000', team: TEAM }, spec, status: {} })) as Resource;
    const refused = await writer.initialize(loadBalancerFamily, made, 'system', 'region fra9 is not available');
    expect(refused.status.status).toBe('failed');
    expect(syncedReason(refused)).toBe(SPEC_REFUSED);

    const touched = await writer.mutateStatus(loadBalancerFamily, TEAM, made.meta.id, () => ({ status_reason: 'region fra9 is not available (still)' }), 'system');
    expect(touched.status.status).toBe('failed');
    expect(syncedReason(touched)).toBe(SPEC_REFUSED);
  });

  it('says ReconcileError for a provider failure, and keeps saying it', async () => {
    const created = await writer.create(loadBalancerFamily, TEAM, spec, 'key_test');
    const failed = await writer.mutateStatus(loadBalancerFamily, TEAM, created.meta.id, () => ({ status: 'failed', status_reason: 'the provider said no' }), 'system');
    expect(syncedReason(failed)).toBe('ReconcileError');
    const touched = await writer.mutateStatus(loadBalancerFamily, TEAM, created.meta.id, () => ({ status_reason: 'the provider still says no' }), 'system');
    expect(syncedReason(touched)).toBe('ReconcileError');
  });
});

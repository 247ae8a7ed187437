/**
 * The Synced condition's reason tells an adoption refusal (SpecRefused, judged again when
 * the spec changes) from a provider failure (ReconcileError). Later status writes on a
 * failed resource must keep whichever it is, or a refusal would stop being re-judged.
 * And every condition written is one the API server accepts under the CRD's
 * metav1.Condition item schema.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { conditionsFor, SPEC_REFUSED } from '../../src/resources/transitions';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { crdFor } from '../../src/resources/crd';
import type { AnyFamily, Condition, Resource } from '../../src/resources/family';

const TEAM = 'team_conditions000000';
const spec = {
  name: 'web',
  region: 'fra1',
  algorithm: 'round_robin',
  protocol: 'http',
  port: 80,
  health_check_path: '/',
  sticky_sessions: false,
  ssl_certificate_id: null,
  backends: [],
};
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

    const touched = await writer.mutateStatus(
      loadBalancerFamily,
      TEAM,
      made.meta.id,
      () => ({ status_reason: 'region fra9 is not available (still)' }),
      'system',
    );
    expect(touched.status.status).toBe('failed');
    expect(syncedReason(touched)).toBe(SPEC_REFUSED);
  });

  it('says ReconcileError for a provider failure, and keeps saying it', async () => {
    const created = await writer.create(loadBalancerFamily, TEAM, spec, 'key_test');
    const failed = await writer.mutateStatus(
      loadBalancerFamily,
      TEAM,
      created.meta.id,
      () => ({ status: 'failed', status_reason: 'the provider said no' }),
      'system',
    );
    expect(syncedReason(failed)).toBe('ReconcileError');
    const touched = await writer.mutateStatus(loadBalancerFamily, TEAM, created.meta.id, () => ({ status_reason: 'the provider still says no' }), 'system');
    expect(syncedReason(touched)).toBe('ReconcileError');
  });
});

/** What a condition breaks of the CRD's item schema (metav1.Condition's rules), if anything. */
function conditionProblems(condition: Record<string, unknown>, item: any): string[] {
  const problems: string[] = [];
  for (const name of item.required) if (condition[name] === undefined) problems.push(`${name} missing`);
  for (const [name, value] of Object.entries(condition)) {
    const rule = item.properties[name];
    if (!rule) problems.push(`${name} unknown`);
    else if (rule.type === 'string') {
      if (typeof value !== 'string') problems.push(`${name} not a string`);
      else {
        if (rule.enum && !rule.enum.includes(value)) problems.push(`${name} ${value} not in ${rule.enum}`);
        if (rule.pattern && !new RegExp(rule.pattern).test(value)) problems.push(`${name} ${value} breaks ${rule.pattern}`);
        if (rule.maxLength !== undefined && value.length > rule.maxLength) problems.push(`${name} longer than ${rule.maxLength}`);
        if (rule.minLength !== undefined && value.length < rule.minLength) problems.push(`${name} shorter than ${rule.minLength}`);
        if (rule.format === 'date-time' && Number.isNaN(Date.parse(value))) problems.push(`${name} not a date-time`);
      }
    } else if (rule.type === 'integer' && !(Number.isInteger(value) && (value as number) >= (rule.minimum ?? -Infinity)))
      problems.push(`${name} ${value} not an integer >= ${rule.minimum}`);
  }
  return problems;
}

describe('conditions as the API server checks them (metav1.Condition)', () => {
  const item = (crdFor(loadBalancerFamily) as any).spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions.items;
  // A family whose state names have separators, and a provider error longer than a condition message may be.
  const family = { ...loadBalancerFamily, states: ['pending_dns', 'running', 'failed'], readyStates: ['running'] } as AnyFamily;
  const resource = { meta: { kind: family.kind, id: 'lb_conditions00000000', team: TEAM, generation: 2 }, spec, status: {} } as unknown as Resource;

  it('writes every condition within the item schema: CamelCase reasons, a transition time, a bounded message', () => {
    const written = [
      conditionsFor(family, resource, {
        status: 'pending_dns',
        status_reason: null,
        observed_generation: 1,
        observed_config: '',
        deleted_at: null,
        conditions: [],
        pending_events: [],
      }),
      conditionsFor(family, resource, {
        status: 'failed',
        status_reason: 'x'.repeat(40_000),
        observed_generation: 2,
        observed_config: '',
        deleted_at: null,
        conditions: [],
        pending_events: [],
      }),
      // Conditions of an earlier version, written without a transition time.
      conditionsFor(family, resource, {
        status: 'running',
        status_reason: null,
        observed_generation: 2,
        observed_config: '',
        deleted_at: null,
        pending_events: [],
        conditions: [{ type: 'Ready', status: 'True', reason: 'Running', message: '' } as Condition],
      }),
    ];
    const problems = written.flat().flatMap((c) => conditionProblems({ ...c }, item).map((p) => `${c.type}: ${p}`));
    expect(problems).toEqual([]);
    expect(written[0].find((c) => c.type === 'Ready')?.reason).toBe('PendingDns');
    expect(written[1].find((c) => c.type === 'Stalled')?.message.length).toBeLessThanOrEqual(32768);
  });

  it('states the item schema of metav1.Condition, one condition per type', () => {
    const conditions = (crdFor(loadBalancerFamily) as any).spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions;
    expect(conditions).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    expect([...item.required].sort()).toEqual(['lastTransitionTime', 'message', 'reason', 'status', 'type']);
    expect(item.properties.status.enum).toEqual(['True', 'False', 'Unknown']);
    expect(item.properties.type).toMatchObject({
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    });
    expect(item.properties.reason).toMatchObject({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' });
    expect(item.properties.message).toMatchObject({ type: 'string', maxLength: 32768 });
    expect(item.properties.lastTransitionTime).toMatchObject({ type: 'string', format: 'date-time' });
    expect(item.properties.observedGeneration).toMatchObject({ type: 'integer', format: 'int64', minimum: 0 });
  });
});

/**
 * The sweep of secrets and records on a real embedded store: entries whose resource does
 * not exist (or no longer needs them) are removed only once older than the grace, owned
 * ones and the system's are kept, expired ones go, every secret the code names per
 * resource has a kind, and records kept as secrets by an earlier version are moved.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { EmbeddedStore } from '../../src/store/embedded';
import { RecordSweeper } from '../../src/controllers/record-sweeper';
import { RECORD_KINDS, RECORD_SWEEP_RULES } from '../../src/record-upkeep';
import { moveRecordsOutOfSecrets } from '../../src/store/records-out-of-secrets';
import { IDEMPOTENCY_RECORD_PREFIX } from '../../src/api/plugins/idempotency';
import { families } from '../../src/resources/registry';
import { webhookFamily, webhookSecretName } from '../../src/resources/webhook';
import { vpnGatewayFamily } from '../../src/resources/vpn-gateway';
import { apiKeyFamily } from '../../src/resources/accounts';
import { leaseRecordName } from '../../src/webhooks/listener';

const GRACE_MS = 60_000;

describe('RecordSweeper', () => {
  let dir: string;
  let store: EmbeddedStore;
  let sweeper: RecordSweeper;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-sweeper-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
    sweeper = new RecordSweeper({ store, logger: pino({ level: 'silent' }), intervalMs: 60_000, orphanGraceMs: GRACE_MS, ...RECORD_SWEEP_RULES });
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const resource = (kind: string, id: string, status: string) => store.create({ meta: { kind, id, team: 'team_a' }, spec: {}, status: { status } });
  const names = async () => (await store.secrets.list('')).map((s) => `${s.team}/${s.name}`).sort();
  const recordNames = async () => (await store.records.list('')).map((s) => `${s.team}/${s.name}`).sort();

  it('removes what no resource needs once the grace has passed, and nothing else', async () => {
    // Owned: a gateway's key, an active subscription's secrets, an active key's hash.
    await resource(vpnGatewayFamily.kind, 'vpn_live', 'active');
    await store.secrets.put('team_a', 'vpn-psk-vpn_live', { value: 'kept-psk-0123456789' });
    await resource(webhookFamily.kind, 'wh_live', 'active');
    await store.secrets.put('team_a', 'webhook-secret-wh_live', { current: 'whsec_kept', previous: '', previous_expires_at: '' });
    await resource(apiKeyFamily.kind, 'key_live', 'active');
    await store.secrets.put('team_a', 'apikey-aaaa', { hash: 'aaaa', key_id: 'key_live' });
    // Left by crashes: resources never made, a deleted subscription's secrets, a revoked key's hash.
    await store.secrets.put('team_a', 'vpn-psk-vpn_never', { value: 'orphan-psk-0123456789' });
    await store.secrets.put('team_b', 'webhook-secret-wh_never', { current: 'whsec_orphan', previous: '', previous_expires_at: '' });
    await resource(webhookFamily.kind, 'wh_deleted', 'deleted');
    await store.secrets.put('team_a', 'webhook-secret-wh_deleted', { current: 'whsec_deleted', previous: '', previous_expires_at: '' });
    await resource(apiKeyFamily.kind, 'key_revoked', 'revoked');
    await store.secrets.put('team_a', 'apikey-bbbb', { hash: 'bbbb', key_id: 'key_revoked' });
    await store.secrets.put('team_a', 'apikey-cccc', { hash: 'cccc', key_id: 'key_never' });
    // Not a resource's: the system's, a name no rule knows, a key hash that names no key.
    await store.secrets.put('__system', 'cursor-signing-key', { key: 'k' });
    await store.records.put('__system', 'bootstrap-team', { team_id: 'team_x', user_id: 'usr_x' });
    await store.secrets.put('team_a', 'something-else', { value: 'v' });
    await store.secrets.put('team_a', 'apikey-dddd', { hash: 'dddd' });
    const everything = await names();
    const newest = Math.max(...(await store.secrets.list('')).map((s) => Date.parse(s.createdAt)));

    // A create in flight (secret written, resource not yet) is not raced: within the grace nothing goes.
    expect(await sweeper.sweep(newest + GRACE_MS - 1_000)).toEqual({ removedOrphans: 0, droppedPrevious: 0, expired: 0 });
    expect(await names()).toEqual(everything);

    expect(await sweeper.sweep(newest + GRACE_MS)).toEqual({ removedOrphans: 5, droppedPrevious: 0, expired: 0 });
    expect(await recordNames()).toEqual(['__system/bootstrap-team']);
    expect(await names()).toEqual([
      '__system/cursor-signing-key',
      'team_a/apikey-aaaa',
      'team_a/apikey-dddd',
      'team_a/something-else',
      'team_a/vpn-psk-vpn_live',
      'team_a/webhook-secret-wh_live',
    ]);
    expect(await store.secrets.get('team_a', 'vpn-psk-vpn_live')).toEqual({ value: 'kept-psk-0123456789' });
    expect(await sweeper.sweep(newest + 2 * GRACE_MS)).toEqual({ removedOrphans: 0, droppedPrevious: 0, expired: 0 });
  });

  it("removes a listener's lease once its listener is deleted or was never made, and keeps a live one's", async () => {
    await resource(webhookFamily.kind, 'wh_listening', 'active');
    await store.records.put('team_a', leaseRecordName('wh_listening'), { holder: 'h', expires_at: '0' });
    await resource(webhookFamily.kind, 'wh_lapsed', 'deleted');
    await store.records.put('team_a', leaseRecordName('wh_lapsed'), { holder: 'h', expires_at: '0' });
    await store.records.put('team_a', leaseRecordName('wh_never'), { holder: '', expires_at: '0' });
    const newest = Math.max(...(await store.records.list('')).map((s) => Date.parse(s.createdAt)));
    expect(await sweeper.sweep(newest + GRACE_MS)).toEqual({ removedOrphans: 2, droppedPrevious: 0, expired: 0 });
    expect(await recordNames()).toEqual(['team_a/webhook-listener-wh_listening']);
  });

  it("removes an Idempotency-Key's record once expired and no request holds it, and keeps the rest", async () => {
    const at = (ms: number) => new Date(ms).toISOString();
    const now = Date.now() + GRACE_MS;
    await store.secrets.put('team_a', `${IDEMPOTENCY_RECORD_PREFIX}done-expired`, { state: 'done', expires_at: at(now - 1) });
    await store.secrets.put('team_a', `${IDEMPOTENCY_RECORD_PREFIX}done-live`, { state: 'done', expires_at: at(now + 60_000) });
    // Expired, but its request still runs and holds it by its lease.
    await store.secrets.put('team_a', `${IDEMPOTENCY_RECORD_PREFIX}held`, { state: 'in_flight', expires_at: at(now - 1), lease_until: at(now + 5_000) });
    expect(await sweeper.sweep(now)).toEqual({ removedOrphans: 0, droppedPrevious: 0, expired: 1 });
    expect(await names()).toEqual([`team_a/${IDEMPOTENCY_RECORD_PREFIX}done-live`, `team_a/${IDEMPOTENCY_RECORD_PREFIX}held`]);
  });

  it('moves the records an earlier version kept as secrets, once, keeping a record already there', async () => {
    const lease = { holder: 'h', expires_at: '7' };
    await store.secrets.put('team_a', leaseRecordName('wh_1'), lease);
    await store.secrets.put('team_a', 'usage-counts-p1-2026-11-29', { day: '2026-11-29', process: 'p1', hours: '{}' });
    await store.secrets.put('team_a', 'session-abc', { hash: 'abc' });
    await store.secrets.put('__system', 'bootstrap-team', { team_id: 'team_old', user_id: 'usr_old' });
    // Moved already by another replica, which then wrote it again: the record wins.
    await store.records.put('__system', 'bootstrap-team', { team_id: 'team_new', user_id: 'usr_new' });
    // Secrets stay secrets.
    await store.secrets.put('team_a', 'apikey-aaaa', { hash: 'aaaa', key_id: 'key_1' });
    await store.secrets.put('team_a', 'webhook-secret-wh_1', { current: 'whsec_1', previous: '', previous_expires_at: '' });

    expect(await moveRecordsOutOfSecrets(store, RECORD_KINDS)).toBe(4);
    expect(await names()).toEqual(['team_a/apikey-aaaa', 'team_a/webhook-secret-wh_1']);
    expect(await recordNames()).toEqual(['__system/bootstrap-team', 'team_a/session-abc', 'team_a/usage-counts-p1-2026-11-29', 'team_a/webhook-listener-wh_1']);
    expect(await store.records.get('team_a', leaseRecordName('wh_1'))).toEqual(lease);
    expect(await store.records.get('__system', 'bootstrap-team')).toEqual({ team_id: 'team_new', user_id: 'usr_new' });
    expect(await moveRecordsOutOfSecrets(store, RECORD_KINDS)).toBe(0);
  });

  it('has a sealed kind for the secret of every family that keeps one, for webhook secrets and for API keys', () => {
    const prefixes = RECORD_KINDS.filter((kind) => kind.sealed).map((kind) => kind.prefix);
    const familySecrets = families.filter((f) => f.secret).map((f) => f.secret!.secretName(''));
    expect(familySecrets).toContain('vpn-psk-');
    expect(prefixes).toEqual(expect.arrayContaining([...familySecrets, webhookSecretName(''), 'apikey-']));
  });
});

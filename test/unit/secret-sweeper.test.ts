/**
 * The secret sweep on a real embedded store: secrets whose resource does not exist (or
 * no longer needs them) are removed only once older than the grace, owned ones and the
 * system's are kept, and every secret the code names per resource has a rule.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { EmbeddedStore } from '../../src/store/embedded';
import { SecretSweeper } from '../../src/controllers/secret-sweeper';
import { SECRET_OWNERSHIP, SECRET_SWEEP_RULES } from '../../src/secret-upkeep';
import { families } from '../../src/resources/registry';
import { webhookFamily, webhookSecretName } from '../../src/resources/webhook';
import { vpnGatewayFamily } from '../../src/resources/vpn-gateway';
import { apiKeyFamily } from '../../src/resources/accounts';
import { leaseSecretName } from '../../src/webhooks/listener';

const GRACE_MS = 60_000;

describe('SecretSweeper', () => {
  let dir: string;
  let store: EmbeddedStore;
  let sweeper: SecretSweeper;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-sweeper-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
    sweeper = new SecretSweeper({ store, logger: pino({ level: 'silent' }), intervalMs: 60_000, orphanGraceMs: GRACE_MS, ...SECRET_SWEEP_RULES });
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const resource = (kind: string, id: string, status: string) => store.create({ meta: { kind, id, team: 'team_a' }, spec: {}, status: { status } });
  const names = async () => (await store.listSecrets('')).map((s) => `${s.team}/${s.name}`).sort();

  it('removes what no resource needs once the grace has passed, and nothing else', async () => {
    // Owned: a gateway's key, an active subscription's secrets, an active key's hash.
    await resource(vpnGatewayFamily.kind, 'vpn_live', 'active');
    await store.putSecret('team_a', 'vpn-psk-vpn_live', { value: 'kept-psk-0123456789' });
    await resource(webhookFamily.kind, 'wh_live', 'active');
    await store.putSecret('team_a', 'webhook-secret-wh_live', { current: 'whsec_kept', previous: '', previous_expires_at: '' });
    await resource(apiKeyFamily.kind, 'key_live', 'active');
    await store.putSecret('team_a', 'apikey-aaaa', { hash: 'aaaa', key_id: 'key_live' });
    // Left by crashes: resources never made, a deleted subscription's secrets, a revoked key's hash.
    await store.putSecret('team_a', 'vpn-psk-vpn_never', { value: 'orphan-psk-0123456789' });
    await store.putSecret('team_b', 'webhook-secret-wh_never', { current: 'whsec_orphan', previous: '', previous_expires_at: '' });
    await resource(webhookFamily.kind, 'wh_deleted', 'deleted');
    await store.putSecret('team_a', 'webhook-secret-wh_deleted', { current: 'whsec_deleted', previous: '', previous_expires_at: '' });
    await resource(apiKeyFamily.kind, 'key_revoked', 'revoked');
    await store.putSecret('team_a', 'apikey-bbbb', { hash: 'bbbb', key_id: 'key_revoked' });
    await store.putSecret('team_a', 'apikey-cccc', { hash: 'cccc', key_id: 'key_never' });
    // Not a resource's: the system's, a name no rule knows, a key hash that names no key.
    await store.putSecret('__system', 'cursor-signing-key', { key: 'k' });
    await store.putSecret('__system', 'bootstrap-team', { team_id: 'team_x', user_id: 'usr_x' });
    await store.putSecret('team_a', 'something-else', { value: 'v' });
    await store.putSecret('team_a', 'apikey-dddd', { hash: 'dddd' });
    const everything = await names();
    const newest = Math.max(...(await store.listSecrets('')).map((s) => Date.parse(s.createdAt)));

    // A create in flight (secret written, resource not yet) is not raced: within the grace nothing goes.
    expect(await sweeper.sweep(newest + GRACE_MS - 1_000)).toEqual({ removedOrphans: 0, droppedPrevious: 0, expiredIdempotencyKeys: 0 });
    expect(await names()).toEqual(everything);

    expect(await sweeper.sweep(newest + GRACE_MS)).toEqual({ removedOrphans: 5, droppedPrevious: 0, expiredIdempotencyKeys: 0 });
    expect(await names()).toEqual([
      '__system/bootstrap-team',
      '__system/cursor-signing-key',
      'team_a/apikey-aaaa',
      'team_a/apikey-dddd',
      'team_a/something-else',
      'team_a/vpn-psk-vpn_live',
      'team_a/webhook-secret-wh_live',
    ]);
    expect(await store.getSecret('team_a', 'vpn-psk-vpn_live')).toEqual({ value: 'kept-psk-0123456789' });
    expect(await sweeper.sweep(newest + 2 * GRACE_MS)).toEqual({ removedOrphans: 0, droppedPrevious: 0, expiredIdempotencyKeys: 0 });
  });

  it("removes a listener's lease once its listener is deleted or was never made, and keeps a live one's", async () => {
    await resource(webhookFamily.kind, 'wh_listening', 'active');
    await store.putSecret('team_a', leaseSecretName('wh_listening'), { holder: 'h', expires_at: '0' });
    await resource(webhookFamily.kind, 'wh_lapsed', 'deleted');
    await store.putSecret('team_a', leaseSecretName('wh_lapsed'), { holder: 'h', expires_at: '0' });
    await store.putSecret('team_a', leaseSecretName('wh_never'), { holder: '', expires_at: '0' });
    const newest = Math.max(...(await store.listSecrets('')).map((s) => Date.parse(s.createdAt)));
    expect(await sweeper.sweep(newest + GRACE_MS)).toEqual({ removedOrphans: 2, droppedPrevious: 0, expiredIdempotencyKeys: 0 });
    expect(await names()).toEqual(['team_a/webhook-listener-wh_listening']);
  });

  it('has a rule for the secret of every family that keeps one, for webhook secrets and for API keys', () => {
    const prefixes = SECRET_OWNERSHIP.map((rule) => rule.prefix);
    const familySecrets = families.filter((f) => f.secret).map((f) => f.secret!.secretName(''));
    expect(familySecrets).toContain('vpn-psk-');
    expect(prefixes).toEqual(expect.arrayContaining([...familySecrets, webhookSecretName(''), 'apikey-']));
  });
});

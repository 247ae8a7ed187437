/**
 * The leader's upkeep of secrets, on the running service (either store): secrets left
 * without their resource are removed after a grace and owned ones kept; a webhook's
 * rotated-away secret is dropped once its overlap has ended, and rotations never lose a
 * secret to each other or to that drop.
 */
import { createHash, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { startTestService, TestService, eventually, request } from '../helpers/service';
import { startReceiver, Receiver } from '../helpers/receiver';
import { dropExpiredPrevious, rotateSecret } from '../../src/webhooks/secrets';
import { webhookSecretName } from '../../src/resources/webhook';
import { RECORD_KINDS } from '../../src/record-upkeep';
import { newId } from '../../src/lib/ids';

jest.setTimeout(120_000);

const stripe = new Stripe('sk_test_unused');
const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.002',
  CLOUDPLANE_SECRET_SWEEP_SECONDS: '1',
  CLOUDPLANE_ORPHAN_SECRET_GRACE_SECONDS: '3',
};
const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };

describe('secrets of the running service', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestService(ENV);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  const subscribe = async (events = ['bucket.*']) => {
    const res = await t.api('POST', '/api/v1/webhooks', { url: receiver.url, events });
    expect(res.status).toBe(201);
    return res.body.data as { id: string; secret: string };
  };
  const stored = (id: string) => t.service.ctx.store.secrets.get(t.teamId, webhookSecretName(id));

  it('drops the previous secret once its overlap has ended, and signs with the current one alone', async () => {
    const hook = await subscribe();
    // The rotation the API does, with an overlap of one second instead of the configured day.
    const fresh = await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 1000);
    expect(await stored(hook.id)).toMatchObject({ current: fresh, previous: hook.secret });

    const dropped = await eventually(async () => {
      const data = await stored(hook.id);
      return data?.previous === '' ? data : null;
    }, 30_000);
    expect(dropped).toEqual({ current: fresh, previous: '', previous_expires_at: '' });
    expect(JSON.stringify(await t.service.ctx.store.secrets.list(''))).not.toContain(hook.secret);

    const bucket = await t.api('POST', '/api/v1/object-storage', { name: 'after-the-overlap', region: 'fra1' });
    expect(bucket.status).toBe(201);
    const delivery = await eventually(async () => receiver.received.find((r) => r.body.includes(bucket.body.data.id)), 30_000);
    const signature = String(delivery.headers['x-service-signature']);
    expect(signature.split(',').filter((part) => part.startsWith('v1='))).toHaveLength(1);
    expect(stripe.webhooks.constructEvent(delivery.body, signature, fresh)).toBeTruthy();
    expect(() => stripe.webhooks.constructEvent(delivery.body, signature, hook.secret)).toThrow();
  });

  it('keeps both secrets of two rotations at once: neither overwrites the other', async () => {
    const hook = await subscribe();
    const rotations = await Promise.all([1, 2].map(() => t.api('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`)));
    expect(rotations.map((r) => r.status)).toEqual([200, 200]);
    const issued = rotations.map((r) => r.body.data.secret as string);
    const data = (await stored(hook.id))!;
    // One is current, the other previous: the secret each caller was given still signs.
    expect([data.current, data.previous].sort()).toEqual([...issued].sort());
  });

  it('gives way to a rotation made after it looked: the drop of an expired previous secret is a swap', async () => {
    const hook = await subscribe();
    await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 3_600_000);
    const [looked] = await t.service.ctx.store.secrets.list(webhookSecretName(hook.id));
    const newest = await rotateSecret(t.service.ctx.store, t.teamId, hook.id, 3_600_000);
    // The drop sees what it listed as expired (placed two hours on), but the secret has changed since.
    expect(await dropExpiredPrevious(t.service.ctx.store, looked, Date.now() + 7_200_000)).toBe(false);
    expect((await stored(hook.id))!.current).toBe(newest);
  });

  it('removes the secrets crashes left without their resource after the grace, and keeps every owned one', async () => {
    const store = t.service.ctx.store;
    const team = t.teamId;
    const given = `psk-${randomBytes(12).toString('hex')}`;
    const withKey = (await t.api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'owned-given', pre_shared_key: given })).body.data;
    const generated = (await t.api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'owned-generated' })).body.data;
    const generatedKey = (await store.secrets.get(team, `vpn-psk-${generated.id}`))!.value;
    const hook = await subscribe();
    const apiKey = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'owned' })).body.data;

    // What crashes leave: a create's secret without its resource, a delete or a revocation
    // whose secret was not removed yet.
    const orphans = [`vpn-psk-${newId('vpn')}`, webhookSecretName(newId('wh'))];
    await store.secrets.put(team, orphans[0], { value: 'orphaned-psk-0123456789' });
    await store.secrets.put(team, orphans[1], { current: 'whsec_orphaned', previous: '', previous_expires_at: '' });
    const deletedHook = await subscribe();
    expect((await t.api('DELETE', `/api/v1/webhooks/${deletedHook.id}`)).status).toBe(200);
    await store.secrets.put(team, webhookSecretName(deletedHook.id), { current: deletedHook.secret, previous: '', previous_expires_at: '' });
    const revoked = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'revoked' })).body.data;
    expect((await t.api('DELETE', `/api/v1/settings/api-keys/${revoked.id}`)).status).toBe(204);
    const revokedHash = createHash('sha256').update(revoked.key).digest('hex');
    await store.secrets.put(team, `apikey-${revokedHash.slice(0, 40)}`, { hash: revokedHash, key_id: revoked.id });
    orphans.push(webhookSecretName(deletedHook.id), `apikey-${revokedHash.slice(0, 40)}`);
    const owned = [`vpn-psk-${withKey.id}`, `vpn-psk-${generated.id}`, webhookSecretName(hook.id)];

    await eventually(async () => {
      const names = (await store.secrets.list('')).map((secret) => secret.name);
      return orphans.every((name) => !names.includes(name)) && owned.every((name) => names.includes(name));
    }, 30_000);
    expect((await store.secrets.get(team, `vpn-psk-${withKey.id}`))!.value).toBe(given);
    expect((await store.secrets.get(team, `vpn-psk-${generated.id}`))!.value).toBe(generatedKey);
    expect((await stored(hook.id))!.current).toBe(hook.secret);
    expect((await t.api('GET', '/api/v1/settings/profile', undefined, { key: apiKey.key })).status).toBe(200);
    expect((await t.api('GET', '/api/v1/vpn-gateways?limit=1')).status).toBe(200);
    expect(await store.secrets.get('__system', 'cursor-signing-key')).toBeDefined();
  });

  it('keeps as a secret only what is secret, and has a kind, with its owner, expiry or upkeep, for every entry', async () => {
    // A console session and an Idempotency-Key record, which no resource owns.
    expect((await request(t.url, 'POST', '/auth/session', undefined, { key: t.key })).status).toBe(201);
    expect((await t.api('POST', '/api/v1/agent/threads', {}, { headers: { 'idempotency-key': 'upkeep-1' } })).status).toBe(201);
    const { store } = t.service.ctx;
    const records = await eventually(async () => {
      const all = await store.records.list('');
      return all.some((s) => s.name.startsWith('usage-')) && all;
    }, 30_000);
    const secrets = await store.secrets.list('');
    const namesOf = (entries: Array<{ team: string; name: string }>) => entries.filter((s) => s.team !== '__system').map((s) => s.name);
    const matching = (patterns: RegExp[]) => expect.arrayContaining(patterns.map((pattern) => expect.stringMatching(pattern)));
    expect(namesOf(secrets)).toEqual(matching([/^vpn-psk-/, /^webhook-secret-/, /^apikey-/, /^idempotency-/]));
    expect(namesOf(records)).toEqual(matching([/^session-/, /^usage-/]));
    // Usage counts and sessions are not secrets; none of them is kept as one.
    expect(namesOf(secrets).filter((name) => /^(session|usage|webhook-listener)-/.test(name))).toEqual([]);
    expect(await store.records.get('__system', 'bootstrap-team')).toBeDefined();

    const kindOf = (name: string, sealed: boolean) => RECORD_KINDS.find((kind) => kind.sealed === sealed && name.startsWith(kind.prefix));
    const unkinded = [...namesOf(secrets).filter((name) => !kindOf(name, true)), ...namesOf(records).filter((name) => !kindOf(name, false))];
    expect(unkinded).toEqual([]);
    for (const kind of RECORD_KINDS) expect([kind.prefix, Boolean(kind.owner ?? kind.expired ?? kind.keptBy)]).toEqual([kind.prefix, true]);
  });
});

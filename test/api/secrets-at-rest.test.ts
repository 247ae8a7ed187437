/**
 * Secrets at rest, in logs and in events. The service is given and makes every kind of
 * secret it keeps: VPN pre-shared keys (given, generated and rotated), database passwords
 * (generated and reset), Kubernetes clusters' kubeconfig tokens (generated and rotated), webhook secrets
 * (created and rotated, signing real deliveries), API keys (issued, used, revoked, and
 * the bootstrap key) and the cursor-signing key. Then every file of its data directory
 * (raw bytes, recursively), everything it logged at trace level (requests included) and
 * every event of the audit log are searched for each of them, as is, in base64 and in
 * hex. None may be found.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, RunningService } from '../../src/service';
import { FAST_ENV, eventually, request, tempDataDir } from '../helpers/service';
import { clusterEnv, clusterMode } from '../helpers/cluster';
import { startReceiver } from '../helpers/receiver';
import { filesUnder, findIn, findInFiles, Needle } from '../helpers/secret-scan';

jest.setTimeout(120_000);

const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };
const psk = () => `psk-${randomBytes(16).toString('hex')}`;

/** A configured key (CLOUDPLANE_ENCRYPTION_KEY), or none: then the key file is made in the data directory. */
const variants: Array<[string, Record<string, string>]> = clusterMode()
  ? [['the Kubernetes store', {}]]
  : [
      ['a generated key file', {}],
      ['a configured key', { CLOUDPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64') }],
    ];

describe.each(variants)('no secret at rest, in the log or in events (%s)', (_variant, variantEnv) => {
  it('finds none of the secrets it was given or made', async () => {
    const dataDir = tempDataDir();
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const cluster = clusterMode() ? await clusterEnv(dataDir) : {};
    const config = loadConfig({
      ...FAST_ENV,
      CLOUDPLANE_PORT: '0',
      CLOUDPLANE_DATA_DIR: dataDir,
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      ...cluster,
      ...variantEnv,
      CLOUDPLANE_LOG_LEVEL: 'trace',
    });
    const receiver = await startReceiver();
    let service: RunningService | null = await startService(config, createLogger('trace', sink));
    const needles: Needle[] = [];
    let audit = '';
    let someId = '';
    try {
      const bootstrapKey = service.bootstrap!.token;
      const url = service.url;
      const api = (method: string, urlPath: string, body?: unknown, key = bootstrapKey) => request(url, method, urlPath, body, { key });
      const team = service.bootstrap!.teamId;
      needles.push({ label: 'bootstrap API key', value: bootstrapKey });

      // Webhook: created before the gateways, so their events are delivered, signed.
      const hook = await api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['vpn_gateway.*'] });
      expect(hook.status).toBe(201);
      const webhookSecrets = [hook.body.data.secret as string];

      const given = psk();
      const withKey = await api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'given', pre_shared_key: given });
      const generated = await api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'generated' });
      expect([withKey.status, generated.status]).toEqual([201, 201]);
      someId = withKey.body.data.id;
      const generatedKey = (await service.ctx.store.secrets.get(team, `vpn-psk-${generated.body.data.id}`))!.value;
      expect(generatedKey).toMatch(/^[A-Za-z0-9]{40}$/);
      needles.push({ label: 'given pre-shared key', value: given }, { label: 'generated pre-shared key', value: generatedKey });

      for (const gateway of [withKey.body.data.id, generated.body.data.id]) {
        await eventually(async () => (await api('GET', `/api/v1/vpn-gateways/${gateway}`)).body.data.status === 'active', 30_000);
        const rotated = psk();
        expect((await api('PATCH', `/api/v1/vpn-gateways/${gateway}`, { pre_shared_key: rotated })).status).toBe(200);
        needles.push({ label: 'rotated pre-shared key', value: rotated });
      }

      const rotation = await api('POST', `/api/v1/webhooks/${hook.body.data.id}/rotate-secret`);
      expect(rotation.status).toBe(200);
      webhookSecrets.push(rotation.body.data.secret);
      expect((await api('PATCH', `/api/v1/vpn-gateways/${someId}`, { name: 'renamed' })).status).toBe(200);
      // Deliveries were signed with both secrets (vpn_gateway.updated after the rotation).
      await eventually(async () => receiver.received.some((r) => String(r.headers['x-service-signature']).split('v1=').length === 3), 30_000);
      for (const secret of webhookSecrets) {
        needles.push(
          { label: 'webhook secret', value: secret },
          { label: 'webhook signing key bytes', value: Buffer.from(secret.slice('whsec_'.length), 'base64') },
        );
      }

      // Database: the generated password (shown once) and the one reset-password made.
      const database = await api('POST', '/api/v1/databases', { name: 'orders', region: 'fra1' });
      expect(database.status).toBe(201);
      await eventually(async () => (await api('GET', `/api/v1/databases/${database.body.data.id}`)).body.data.status === 'running', 30_000);
      const reset = await api('POST', `/api/v1/databases/${database.body.data.id}/reset-password`);
      expect(reset.status).toBe(200);
      expect(reset.body.data.password).not.toBe(database.body.data.password);
      needles.push({ label: 'database password', value: database.body.data.password }, { label: 'reset database password', value: reset.body.data.password });
      const user = await api('POST', `/api/v1/databases/${database.body.data.id}/users`, { name: 'app_user' });
      expect(user.status).toBe(201);
      const userReset = await api('POST', `/api/v1/databases/${database.body.data.id}/users/app_user/reset-password`);
      needles.push(
        { label: 'database user password', value: user.body.data.password },
        { label: 'reset database user password', value: userReset.body.data.password },
      );

      // Kubernetes cluster: the kubeconfig's generated token and the one a rotation made, each read from the kubeconfig.
      const cluster = await api('POST', '/api/v1/kubernetes-clusters', {
        name: 'prod',
        region: 'fra1',
        node_pools: [{ name: 'pool', size: 's-1vcpu-2gb', count: 1 }],
      });
      expect(cluster.status).toBe(201);
      const clusterPath = `/api/v1/kubernetes-clusters/${cluster.body.data.id}`;
      const tokenOf = async () => {
        const kubeconfig = await api('GET', `${clusterPath}/kubeconfig`);
        expect(kubeconfig.status).toBe(200);
        return String(/token: (\S+)/.exec(String(kubeconfig.body))?.[1]);
      };
      await eventually(async () => (await api('GET', clusterPath)).body.data.status === 'running', 30_000);
      const firstToken = await tokenOf();
      expect((await api('POST', `${clusterPath}/kubeconfig/rotate`)).status).toBe(200);
      const rotatedToken = await tokenOf();
      expect(rotatedToken).not.toBe(firstToken);
      expect(firstToken).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
      needles.push({ label: 'kubeconfig token', value: firstToken }, { label: 'rotated kubeconfig token', value: rotatedToken });

      const issued = await api('POST', '/api/v1/settings/api-keys', { name: 'ci' });
      const revokedKey = await api('POST', '/api/v1/settings/api-keys', { name: 'old' });
      expect([issued.status, revokedKey.status]).toEqual([201, 201]);
      expect((await api('GET', '/api/v1/settings/profile', undefined, issued.body.data.key)).status).toBe(200);
      expect((await api('DELETE', `/api/v1/settings/api-keys/${revokedKey.body.data.id}`)).status).toBe(204);
      needles.push({ label: 'issued API key', value: issued.body.data.key }, { label: 'revoked API key', value: revokedKey.body.data.key });

      // The cursor key signs a page walk.
      const page = await api('GET', '/api/v1/vpn-gateways?limit=1');
      expect(page.body.meta.next_cursor).toEqual(expect.any(String));
      expect((await api('GET', `/api/v1/vpn-gateways?limit=1&cursor=${encodeURIComponent(page.body.meta.next_cursor)}`)).status).toBe(200);
      needles.push({ label: 'cursor-signing key', value: service.ctx.cursorKey });
      if (variantEnv.CLOUDPLANE_ENCRYPTION_KEY) needles.push({ label: 'encryption key', value: Buffer.from(variantEnv.CLOUDPLANE_ENCRYPTION_KEY, 'base64') });

      const events: unknown[] = [];
      let cursor: string | null = null;
      do {
        const res = await api('GET', `/api/v1/audit-log?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.status).toBe(200);
        events.push(...res.body.data);
        cursor = res.body.meta.next_cursor;
      } while (cursor);
      expect(events.length).toBeGreaterThan(8);
      audit = JSON.stringify(events);
    } finally {
      await service?.stop();
      service = null;
      await receiver.close();
    }

    const log = lines.join('');
    // The searches look where the data is: requests are logged, the gateway is on disk and in events.
    expect(log).toContain('request completed');
    expect(log).toContain(someId);
    expect(audit).toContain(someId);
    expect(filesUnder(dataDir).some((file) => fs.readFileSync(file).includes(someId))).toBe(true);
    expect(needles.length).toBe(variantEnv.CLOUDPLANE_ENCRYPTION_KEY ? 19 : 18);

    const found = [...findInFiles(dataDir, needles), ...findIn('the log', Buffer.from(log), needles), ...findIn('the audit log', Buffer.from(audit), needles)];
    expect(found).toEqual([]);
    if (variantEnv.CLOUDPLANE_ENCRYPTION_KEY) expect(fs.existsSync(path.join(dataDir, 'encryption.key'))).toBe(false);
  });
});

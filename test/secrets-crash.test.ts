/**
 * Secrets of the real service process (`node dist/src/main.js`) on the embedded store:
 * start-up stops with a clear message when the key does not fit the data directory, and
 * the keys that SIGKILLs during VPN creates leave behind (a create writes the key, then
 * the gateway) are collected after a restart while every gateway keeps its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startChildService, ChildService } from './helpers/child-service';
import { eventually, tempDataDir } from './helpers/service';
import { EmbeddedStore } from '../src/store/embedded';
import { vpnGatewayFamily } from '../src/resources/vpn-gateway';

jest.setTimeout(180_000);

/** A fixed bootstrap key: `cpk_` and 40 base62 characters. */
const KEY = 'cpk_SecretsTest0123456789abcdefghiABCDEFGHIJ';
const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a stopped or killed service left: each gateway's key, and the keys of no gateway. */
async function keysAtRest(dataDir: string): Promise<{ gateways: Map<string, { tunnel: string; key?: string }>; orphans: string[] }> {
  const store = new EmbeddedStore({ dataDir });
  await store.start(); // takes over a dead process's lock
  try {
    const gateways = new Map<string, { tunnel: string; key?: string }>();
    for (const gateway of await store.list<{ tunnel_type: string }, unknown>(vpnGatewayFamily.kind))
      gateways.set(gateway.meta.id, { tunnel: gateway.spec.tunnel_type });
    const orphans: string[] = [];
    for (const secret of await store.secrets.list('vpn-psk-')) {
      const gateway = gateways.get(secret.name.slice('vpn-psk-'.length));
      if (gateway) gateway.key = secret.data.value;
      else orphans.push(secret.name);
    }
    return { gateways, orphans };
  } finally {
    await store.stop();
  }
}

describe('the secrets of the real service', () => {
  const children: ChildService[] = [];
  const start = async (dataDir: string, env: Record<string, string> = {}) => {
    const svc = await startChildService({ dataDir, key: KEY, env: { CLOUDPLANE_SIM_DELAY_MS: '50', ...env } });
    children.push(svc);
    return svc;
  };
  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill();
  });

  it('refuses to start with a wrong key or without its key file, saying why, and starts again with the right one', async () => {
    const dataDir = tempDataDir();
    const key = randomBytes(32).toString('base64');
    const first = await start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: key });
    expect((await first.api('POST', '/api/v1/vpn-gateways', { ...VPN, name: 'kept' })).status).toBe(201);
    expect(await first.stop()).toBe(0);

    await expect(start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64') })).rejects.toThrow(
      /exited with code 1 before listening[\s\S]*cloudplane: .*encrypted with key [0-9a-f]{16}, which is not the configured key nor a previous one.*CLOUDPLANE_ENCRYPTION_KEY/,
    );
    await expect(start(dataDir)).rejects.toThrow(
      /exited with code 1[\s\S]*holds encrypted secrets, but CLOUDPLANE_ENCRYPTION_KEY is not set and the key file .*encryption\.key is missing/,
    );
    expect(fs.existsSync(path.join(dataDir, 'encryption.key'))).toBe(false);
    await expect(start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: 'c2hvcnQ=' })).rejects.toThrow(/CLOUDPLANE_ENCRYPTION_KEY must be the base64 of 32 random bytes/);

    const again = await start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: key });
    const list = await again.api('GET', '/api/v1/vpn-gateways');
    expect(list.body.data.map((g: { name: string }) => g.name)).toEqual(['kept']);
    expect(await again.stop()).toBe(0);
  });

  it("collects the keys SIGKILLs during VPN creates left without a gateway, and keeps every gateway's key", async () => {
    const dataDir = tempDataDir();
    const env = { CLOUDPLANE_SIM_DELAY_MS: '300', CLOUDPLANE_RATE_LIMIT_PER_MINUTE: '1000000' };
    /** Keys given in creates the service acknowledged, by gateway id. */
    const given = new Map<string, string>();
    let left: Awaited<ReturnType<typeof keysAtRest>> = { gateways: new Map(), orphans: [] };
    // A kill lands between a create's two writes often, but not always: a few rounds at most.
    for (let round = 0; round < 8 && left.orphans.length === 0; round++) {
      const svc = await start(dataDir, env);
      let dead = false;
      const writer = async (w: number) => {
        for (let n = 0; !dead; n++) {
          const key = n % 2 === 0 ? `given-${randomBytes(12).toString('hex')}` : undefined;
          try {
            const res = await svc.api('POST', '/api/v1/vpn-gateways', { ...VPN, name: `r${round}-${w}-${n}`, ...(key ? { pre_shared_key: key } : {}) });
            if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
            if (key) given.set(res.body.data.id, key);
          } catch (err) {
            if (dead) return; // the request was on the wire at the kill
            throw err;
          }
        }
      };
      const writers = Promise.all(Array.from({ length: 16 }, (_, w) => writer(w)));
      await sleep(400 + Math.random() * 800);
      dead = true;
      await svc.kill();
      await writers;
      left = await keysAtRest(dataDir);
    }
    expect(left.orphans.length).toBeGreaterThan(0);
    const gateways = left.gateways;
    // Each create writes its key first: an IPsec gateway on disk has one, a given one is the one given.
    for (const [, gateway] of gateways) if (gateway.tunnel === 'ipsec') expect(gateway.key).toEqual(expect.any(String));
    for (const [id, key] of given) expect(gateways.get(id)?.key).toBe(key);

    // The leader's sweep, with a short grace, collects them after the restart.
    const restarted = await start(dataDir, {
      ...env,
      CLOUDPLANE_ORPHAN_SECRET_GRACE_SECONDS: '1',
      CLOUDPLANE_SECRET_SWEEP_SECONDS: '1',
      CLOUDPLANE_LOG_LEVEL: 'info',
    });
    await eventually(async () => left.orphans.every((name) => restarted.output().includes(name)), 60_000);
    expect(await restarted.stop()).toBe(0);

    const after = await keysAtRest(dataDir);
    expect(after.orphans).toEqual([]);
    expect([...after.gateways.keys()].sort()).toEqual([...gateways.keys()].sort());
    for (const [id, gateway] of gateways) expect(after.gateways.get(id)?.key).toBe(gateway.key);
  });
});

/**
 * Secrets of the real service process (`node dist/src/main.js`) on the embedded store:
 * start-up stops with a clear message when the key does not fit the data directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startChildService, ChildService } from './helpers/child-service';
import { tempDataDir } from './helpers/service';

jest.setTimeout(180_000);

/** A fixed bootstrap key: `cpk_` and 40 base62 characters. */
const KEY = 'cpk_SecretsTest0123456789abcdefghiABCDEFGHIJ';
const VPN = { region: 'fra1', tunnel_type: 'ipsec', remote_network_cidr: '192.168.10.0/24', remote_peer_ip: '8.8.4.4' };

describe('the encryption key of the real service', () => {
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
    await expect(start(dataDir)).rejects.toThrow(/exited with code 1[\s\S]*holds encrypted secrets, but CLOUDPLANE_ENCRYPTION_KEY is not set and the key file .*encryption\.key is missing/);
    expect(fs.existsSync(path.join(dataDir, 'encryption.key'))).toBe(false);
    await expect(start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: 'c2hvcnQ=' })).rejects.toThrow(/CLOUDPLANE_ENCRYPTION_KEY must be the base64 of 32 random bytes/);

    const again = await start(dataDir, { CLOUDPLANE_ENCRYPTION_KEY: key });
    const list = await again.api('GET', '/api/v1/vpn-gateways');
    expect(list.body.data.map((g: { name: string }) => g.name)).toEqual(['kept']);
    expect(await again.stop()).toBe(0);
  });
});

/**
 * A key's secret is named after the first 40 hex digits of its hash, and authentication
 * finds it by that name: the full hash must match as well. The check moved from every
 * request to the moment a secret found by name enters the authenticator's map (issue 16,
 * the read path), so it is pinned here: a token whose hash shares the name's prefix with
 * another's, but not the rest, is refused, on a fresh authenticator and on one that has
 * already seen the real key.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { ApiKeyAuthenticator, SECRET_PREFIX } from '../../src/accounts/authenticator';
import { userFamily } from '../../src/resources/accounts';

const TOKEN = 'cpk_KeyWhoseSecretIsNamedAfterItsHash0123456789';
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

describe('the full hash of an API key', () => {
  let dir: string;
  let store: EmbeddedStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-key-hash-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('must match the secret found by its prefix, or the token is refused', async () => {
    const writer = new ResourceWriter(store);
    await writer.create(userFamily, 'team_a', { name: 'Owner', email: 'owner@example.com', role: 'owner' }, 'system', 'usr_00000000000000000001');
    const issuer = new ApiKeyAuthenticator(store, writer);
    const { key } = await issuer.issue('team_a', 'usr_00000000000000000001', 'ci', 'system', { token: TOKEN });
    const hash = hashOf(TOKEN);
    const name = `${SECRET_PREFIX}${hash.slice(0, 40)}`;
    expect(await store.secrets.get('team_a', name)).toEqual({ hash, key_id: key.meta.id });

    // The secret under the same name now records another full hash (as a token whose hash
    // shared the first 40 digits would have): the token no longer matches it.
    const other = `${hash.slice(0, 40)}${hash.slice(40).split('').reverse().join('')}`;
    expect(other).not.toBe(hash);
    await store.secrets.put('team_a', name, { hash: other, key_id: key.meta.id });
    const fresh = new ApiKeyAuthenticator(store, writer);
    expect(await fresh.authenticate(TOKEN)).toBeNull();

    // A secret that does hold the token's full hash is accepted.
    await store.secrets.put('team_a', name, { hash, key_id: key.meta.id });
    const again = new ApiKeyAuthenticator(store, writer);
    expect((await again.authenticate(TOKEN))?.key).toBe(key.meta.id);
  });
});

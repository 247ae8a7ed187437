/**
 * A configured key (CLOUDPLANE_BOOTSTRAP_API_KEY) issued by two replicas at once is one
 * key: replicas starting together on an empty cluster each see the key unknown and issue
 * it, and two records for one token gave each replica its own key id, so a retry with an
 * Idempotency-Key on the other replica was not recognised (idempotency-replicas.test.ts
 * failed under load) and the key's rate limit was split.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { ApiKeyAuthenticator } from '../../src/accounts/authenticator';
import { apiKeyFamily, userFamily } from '../../src/resources/accounts';

const TOKEN = 'cpk_ConfiguredKeyIssuedTwice0123456789abcdefgh';

describe('a configured key issued twice at once', () => {
  let dir: string;
  let store: EmbeddedStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-configured-key-'));
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('makes one key, which both issuers then authenticate as the same key', async () => {
    const writer = new ResourceWriter(store);
    await writer.create(userFamily, 'team_a', { name: 'Owner', email: 'owner@example.com', role: 'owner' }, 'system', 'usr_00000000000000000001');
    const [one, two] = [new ApiKeyAuthenticator(store, writer), new ApiKeyAuthenticator(store, writer)];
    const issued = await Promise.all(
      [one, two].map((authenticator) => authenticator.issue('team_a', 'usr_00000000000000000001', 'bootstrap', 'system', { token: TOKEN })),
    );
    expect(issued[0].key.meta.id).toBe(issued[1].key.meta.id);
    expect((await store.list(apiKeyFamily.kind)).map((key) => key.meta.id)).toEqual([issued[0].key.meta.id]);
    const principals = await Promise.all([one, two].map((authenticator) => authenticator.authenticate(TOKEN)));
    expect(principals.map((p) => p?.key)).toEqual([issued[0].key.meta.id, issued[0].key.meta.id]);
  });

  it('gives a generated key an id of its own each time', async () => {
    const writer = new ResourceWriter(store);
    await writer.create(userFamily, 'team_a', { name: 'Owner', email: 'owner@example.com', role: 'owner' }, 'system', 'usr_00000000000000000001');
    const authenticator = new ApiKeyAuthenticator(store, writer);
    const [a, b] = await Promise.all([0, 1].map(() => authenticator.issue('team_a', 'usr_00000000000000000001', 'ci', 'system')));
    expect(a.key.meta.id).not.toBe(b.key.meta.id);
  });
});
